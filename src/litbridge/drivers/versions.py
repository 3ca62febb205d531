"""Which rules read which CLI version, known before the first frame: shared by every versioned driver.

A driver keeps a table of rules by version prefix (`{"2.1": v2_1.Rules}`) and asks `pick` for a session's
version, which comes from `<binary> --version` (`binary_version`, run once per binary file) or, for
`litbridge replay`, from the version the recorded output printed (`recorded_version`). So a session of an older
version keeps reading its first frames with its own rules when a newer rules class is added. Knows no CLI.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from typing import TypeVar

log = logging.getLogger(__name__)

R = TypeVar("R")
VERSION_TIMEOUT = 10.0
_VERSION_RE = re.compile(r"(\d+\.\d+\.\d+)")
_GAP = rb"(?:\s|\x1b\[[0-9;?]*[A-Za-z])"  # what a TUI draws between words: spaces, cursor and colour moves
_cache: dict[tuple[str, int, float], str | None] = {}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def pick(rules: Mapping[str, R], version: str | None) -> R:
    """The rules for a version: the longest registered prefix that matches on dot boundaries; an unknown or
    missing version gets the newest rules (the caller logs it)."""
    if version:
        for prefix in sorted(rules, key=_key, reverse=True):
            if version == prefix or version.startswith(prefix + "."):
                return rules[prefix]
    return rules[max(rules, key=_key)]


def binary_version(binary: str, env: Mapping[str, str] | None = None) -> str | None:
    """`<binary> --version` -> "2.1.328" (cached per binary file: path, size, mtime), or None when it cannot be
    found, run or read. `env` is the session's environment (its PATH finds the binary)."""
    path = shutil.which(binary, path=(env or os.environ).get("PATH")) or binary
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.realpath(path), st.st_size, st.st_mtime)
    if key in _cache:
        return _cache[key]
    version: str | None = None
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=VERSION_TIMEOUT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            check=False,
        )
        m = _VERSION_RE.search(out.stdout.decode("utf-8", "replace"))
        version = m.group(1) if m else None
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("%s --version failed: %s", path, exc)
    _cache[key] = version
    return version


def logo_version_re(*words: bytes) -> re.Pattern[bytes]:
    """The version a TUI prints after its name (`Claude Code v2.1.328`, `OpenAI Codex (v0.169.0)`), matched in
    raw output, where the spaces may be cursor moves and colour changes."""
    return re.compile((_GAP + b"+").join(map(re.escape, words)) + _GAP + rb"*\(?v(\d+\.\d+\.\d+)")


def recorded_version(chunks: Iterable[tuple[float, bytes]], pattern: re.Pattern[bytes]) -> str | None:
    """The version a recording's output printed (in its first 400 chunks), for `litbridge replay`."""
    m = pattern.search(b"".join(data for _, data in itertools.islice(chunks, 400)))
    return m.group(1).decode() if m else None
