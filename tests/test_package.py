"""The installed package: version, command line entry point, extension or announced fallback."""

import subprocess
import sys

import litbridge


def test_version_matches_cli():
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"litbridge {litbridge.__version__}"


def test_help_lists_usage():
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "--help"], capture_output=True, text=True, check=True
    )
    assert "usage: litbridge" in out.stdout


def test_no_command_is_an_error():
    out = subprocess.run([sys.executable, "-m", "litbridge"], capture_output=True, text=True)
    assert out.returncode == 2
