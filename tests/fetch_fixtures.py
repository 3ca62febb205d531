"""Fetch what the test suite needs from the package registries into `.cache/` (idempotent).

- pyte 0.8.2's sdist (its own test suite and captured streams) -> .cache/pyte-0.8.2/
- the real Claude Code 2.1.328 native binary from npm        -> .cache/claude-code/
Each step is best effort: a failure is reported and the tests that need it skip with the reason.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LITBRIDGE_TEST_CACHE", ROOT / ".cache"))
PYTE_DIR = CACHE / "pyte-0.8.2"
# The real Claude Code recordings (read-only, beside the project); the one definition every test and benchmark uses.
CAPTURES = Path(os.environ.get("LITBRIDGE_CAPTURES", ROOT.parent / "shared" / "captures"))
CLAUDE_DIR = CACHE / "claude-code"
CLAUDE_VERSION = "2.1.328"


def fetch_pyte() -> bool:
    if (PYTE_DIR / "tests").is_dir():
        return True
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", tmp, "pyte==0.8.2"]
        if subprocess.run(cmd).returncode != 0:
            print("fetch_fixtures: could not download the pyte 0.8.2 sdist", file=sys.stderr)
            return False
        (sdist,) = glob.glob(os.path.join(tmp, "pyte-0.8.2.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)
        PYTE_DIR.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(PYTE_DIR, ignore_errors=True)
        shutil.move(os.path.join(tmp, "pyte-0.8.2"), PYTE_DIR)
    return True


def claude_binary() -> Path:
    return CLAUDE_DIR / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"


def fetch_claude() -> bool:
    if claude_binary().exists():
        return True
    if sys.platform != "linux" or shutil.which("npm") is None:
        print("fetch_fixtures: npm not available; real Claude Code tests will skip", file=sys.stderr)
        return False
    CLAUDE_DIR.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", str(CLAUDE_DIR),
           f"@anthropic-ai/claude-code@{CLAUDE_VERSION}"]
    if subprocess.run(cmd).returncode != 0 or not claude_binary().exists():
        print("fetch_fixtures: could not install Claude Code from npm", file=sys.stderr)
        return False
    claude_binary().chmod(0o755)
    return True


def main() -> int:
    ok_pyte = fetch_pyte()
    ok_claude = fetch_claude()
    print(f"fetch_fixtures: pyte sdist {'ok' if ok_pyte else 'MISSING'}, claude {'ok' if ok_claude else 'MISSING'}")
    return 0  # never fail the run here: dependent tests skip with a reason


if __name__ == "__main__":
    raise SystemExit(main())
