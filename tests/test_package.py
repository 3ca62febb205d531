"""The installed package: version, command line entry point, extension or announced fallback."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def _pyproject() -> dict:
    import tomllib  # 3.11+: the 3.10 run skips the checks that read pyproject.toml

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


ROOT = Path(__file__).resolve().parents[1]
needs_tomllib = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is 3.11+")


@needs_tomllib
def test_summary_and_help_name_every_supported_cli():
    """The package summary (PyPI), `litbridge --help` and the README's "What it is" name every CLI with a driver,
    and the generic one (each as a word: `pi`, not the `pi` in `copilot`); the help says what the summary says."""
    summary = _pyproject()["project"]["description"]
    out = subprocess.run(
        [sys.executable, "-m", "litbridge", "--help"], capture_output=True, text=True, check=True
    )
    assert "".join(summary.split()) in "".join(out.stdout.split())  # argparse wraps, at hyphens too
    # the built-in drivers, in a fresh interpreter: tests register drivers of their own in this one
    builtin = subprocess.run(
        [sys.executable, "-c", "from litbridge.drivers import clis; print(*clis())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "claude" in builtin
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    what_it_is = readme.split("\n## What it is\n\n", 1)[1].split("\n\n", 1)[0]
    for name in [*builtin, "generic"]:
        word = re.compile(rf"\b{re.escape(name)}\b")
        assert word.search(summary.lower()), f"the summary does not name {name!r}"
        assert word.search(what_it_is.lower()), f"the README's What it is does not name {name!r}"


def test_readme_links_work_on_pypi():
    """The README is the PyPI long description, where a relative link or image points nowhere: every link and
    image is an absolute URL (the repository's files through github.com, images through raw.githubusercontent)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"(!?)\[[^\]]*\]\(([^)\s]+)", readme) + [
        ("", t) for t in re.findall(r'src="([^"]+)"', readme)
    ]
    assert targets
    for bang, target in targets:
        assert re.match(r"https://", target), f"relative link in README.md: {target}"
        if bang:
            assert target.startswith("https://raw.githubusercontent.com/"), target


@needs_tomllib
def test_wheels_and_classifiers_cover_the_same_pythons():
    """Each CPython the wheels are built for is a classifier, and requires-python starts at the oldest."""
    meta = _pyproject()
    built = re.findall(r"cp3(\d+)-\*", meta["tool"]["cibuildwheel"]["build"])
    classified = [
        c.rsplit(".", 1)[1]
        for c in meta["project"]["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert built == classified and "14" in built
    assert meta["project"]["requires-python"] == f">=3.{built[0]}"
