"""The repository stands alone: no doc, comment or test points at notes, trackers or folders outside it.

A reader of a clone (or of the sdist) has only what is in it, so a citation such as a notes file's entry, a
tracker's issue number, a team's code name or a sibling folder of the checkout is a dead end. Each finding is
written out where it is cited (what the bug was, and the test that pins it) instead.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()

OUTSIDE = re.compile(
    r"\.\./shared\b"  # a sibling folder of the checkout
    r"|\bbugs\.md\b"  # a notes file kept outside the repository
    r"|/work/(?:notes|shared|main|wt)\b"  # the machine the project was developed on
    r"|\bissues? #\d+"  # a tracker's issue number: "issue #18", "issues #12-#19"
    r"|\bissues? \d+(?:\s*[-–]\s*\d+)?\b(?! (?:bytes?|lines?|times?|ms|s)\b)"  # "issue 31", "issues 12-19"
    r"|\(#\d+\)"  # "(#18)"
    r"|\bCORE-[A-Z]\b"  # a team's code name
    r"|(?<![\w/])shared/(?:captures|reference)|\bproject brief\b",  # the brief the project was built from
    re.IGNORECASE,
)
SKIP_DIRS = {".git", ".venv", ".cache", "build", "dist", "node_modules", "__pycache__", ".pytest_cache"}


def _files() -> list[Path]:
    """The tracked files of a checkout; in an unpacked sdist (no git), every file under the root."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        return [
            p
            for p in ROOT.rglob("*")
            if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts) and ".egg-info" not in str(p)
        ]


def test_nothing_points_outside_the_repository() -> None:
    found = []
    for path in _files():
        if path.resolve() == THIS or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (images, archives)
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for m in OUTSIDE.finditer(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()[:120]}")
    assert not found, "references to things outside the repository:\n" + "\n".join(found)


def test_the_check_catches_each_kind() -> None:
    """The pattern is not vacuous: each kind of reference the repository once had is caught."""
    for text in (
        "see ../shared/reference/rift-serve.md",
        "(bugs.md#2, fixed)",
        "filed in /work/notes/bugs.md",
        "## 6. Bounded memory (issue #18)",
        "after issues #12–#19",
        "cut off by whichever bound (#18)",
        "reported to CORE-A",
        "what issue 17 changed",
        "lives in the project brief's `shared/captures/`",
    ):
        assert OUTSIDE.search(text), text
    for text in ("❯ [Pasted text #1 +3 lines]", "~/work/project", "\x1b#8", "a PR number", "lit-bridge-rs"):
        assert not OUTSIDE.search(text), text
