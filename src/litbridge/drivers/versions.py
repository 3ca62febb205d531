"""Which rules read which CLI version, known before the first frame: shared by every versioned driver.

A driver keeps a table of rules by version prefix (`{"2.1": v2_1.Rules}`) and asks `pick` for a session's
version, which comes from `<binary> --version` (`detect_version`: run once per binary file, in a worker thread so a
`create` never stalls the event loop) or, for `litbridge replay`, from the version the recorded output printed
(`recorded_version`). So a session of an older version keeps reading its first frames with its own rules when a
newer rules class is added. Knows no CLI.
"""

from __future__ import annotations

import asyncio
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
_Key = tuple[str, int, float]
_cache: dict[_Key, str | None] = {}
_running: dict[_Key, asyncio.Task[str | None]] = {}


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


def _binary_key(binary: str, env: Mapping[str, str] | None) -> tuple[str, _Key] | None:
    """(the path found, the cache key: real path, size, mtime) of a binary, or None when it is not there."""
    path = shutil.which(binary, path=(env or os.environ).get("PATH")) or binary
    try:
        st = os.stat(path)
    except OSError:
        return None
    return path, (os.path.realpath(path), st.st_size, st.st_mtime)


def _run_version(path: str, env: Mapping[str, str] | None) -> str | None:
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=VERSION_TIMEOUT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("%s --version failed: %s", path, exc)
        return None
    m = _VERSION_RE.search(out.stdout.decode("utf-8", "replace"))
    return m.group(1) if m else None


def binary_version(binary: str, env: Mapping[str, str] | None = None) -> str | None:
    """`<binary> --version` -> "2.1.328" (cached per binary file: real path, size, mtime), or None when it cannot be
    found, run or read. `env` is the session's environment (its PATH finds the binary). Blocks: for tools; a
    driver on the event loop uses `detect_version`."""
    found = _binary_key(binary, env)
    if found is None:
        return None
    path, key = found
    if key not in _cache:
        _cache[key] = _run_version(path, env)
    return _cache[key]


def cached_version(binary: str, env: Mapping[str, str] | None = None) -> str | None:
    """The version `binary_version`/`detect_version` already read for this binary file, without running it."""
    found = _binary_key(binary, env)
    return _cache.get(found[1]) if found is not None else None


async def detect_version(binary: str, env: Mapping[str, str] | None = None) -> str | None:
    """`binary_version` without blocking the event loop: `<binary> --version` runs in a worker thread (up to
    VERSION_TIMEOUT), once per binary file; concurrent callers for the same file share the one run."""
    found = _binary_key(binary, env)
    if found is None:
        return None
    path, key = found
    if key in _cache:
        return _cache[key]
    task = _running.get(key)
    if task is None or task.get_loop() is not asyncio.get_running_loop():
        task = asyncio.ensure_future(asyncio.to_thread(_run_version, path, env))
        _running[key] = task

        def done(t: asyncio.Task[str | None], key: _Key = key) -> None:
            if _running.get(key) is t:
                del _running[key]
            if not t.cancelled() and t.exception() is None:
                _cache[key] = t.result()

        task.add_done_callback(done)
    return await asyncio.shield(task)


def logo_version_re(*words: bytes) -> re.Pattern[bytes]:
    """The version a TUI prints after its name (`Claude Code v2.1.328`, `OpenAI Codex (v0.169.0)`), matched in
    raw output, where the spaces may be cursor moves and colour changes."""
    return re.compile((_GAP + b"+").join(map(re.escape, words)) + _GAP + rb"*\(?v(\d+\.\d+\.\d+)")


def recorded_version(chunks: Iterable[tuple[float, bytes]], pattern: re.Pattern[bytes]) -> str | None:
    """The version a recording's output printed (in its first 400 chunks), for `litbridge replay`."""
    m = pattern.search(b"".join(data for _, data in itertools.islice(chunks, 400)))
    return m.group(1).decode() if m else None
