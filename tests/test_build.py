"""Building the package from a copy of the source tree, as `pip wheel .` does for a user.

A wheel carries the compiled core (stripped: no debug info), the licence and the typing files, never the
generated C; a build without a working compiler fails naming the way out, unless LITBRIDGE_NO_EXTENSIONS=1
asks for the pure-Python wheel. These builds fetch setuptools and Cython from PyPI (pip's build isolation).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / ".github" / "scripts"
SOURCES = ("src", "setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")

pytestmark = pytest.mark.timeout(900)


def _tree(tmp_path: Path, extra: tuple[str, ...] = ()) -> Path:
    """The files a build reads, copied (the checkout stays free of build/, egg-info and generated C)."""
    tree = tmp_path / "src-tree"
    tree.mkdir()
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "*.html", "__pycache__", "*.egg-info")
    for name in SOURCES + extra:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, ignore=ignore)
        else:
            shutil.copy2(src, tree / name)
    return tree


def _pip_wheel(tree: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LITBRIDGE_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-q", "-w", str(out)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=880,
    )


@pytest.mark.skipif(sys.platform != "linux", reason="CC=/bin/false and ELF inspection are Linux-specific")
def test_no_compiler_fails_loudly_unless_pure_python_is_asked_for(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    failed = _pip_wheel(tree, tmp_path / "broken", CC="/bin/false")
    out = failed.stdout + failed.stderr
    assert failed.returncode != 0, out[-3000:]
    assert "could not build the compiled core litbridge._core.screen" in out, out[-3000:]
    assert "LITBRIDGE_NO_EXTENSIONS=1" in out
    assert not list((tmp_path / "broken").glob("*.whl"))

    pure = _pip_wheel(tree, tmp_path / "pure", CC="/bin/false", LITBRIDGE_NO_EXTENSIONS="1")
    assert pure.returncode == 0, (pure.stdout + pure.stderr)[-3000:]
    (wheel,) = (tmp_path / "pure").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name  # no platform tag on a wheel without a .so
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))], names


@pytest.mark.skipif(sys.platform != "linux", reason="ELF inspection is Linux-specific")
def test_wheel_ships_the_stripped_core_and_licence_but_no_c(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    built = _pip_wheel(tree, tmp_path / "wheel")
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    zf = zipfile.ZipFile(wheel)
    names = zf.namelist()
    assert not [n for n in names if n.endswith((".c", ".html"))], names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    for typing_file in ("litbridge/py.typed", "litbridge/_core/screen.pyi", "litbridge/pty/_spawn.pyi"):
        assert typing_file in names
    assert [n for n in names if n.startswith("litbridge/pty/_spawn.") and n.endswith(".so")], names
    (so_name,) = [n for n in names if n.startswith("litbridge/_core/screen.") and n.endswith(".so")]
    so = tmp_path / "screen.so"
    so.write_bytes(zf.read(so_name))
    if shutil.which("readelf"):
        sections = subprocess.run(["readelf", "-S", "-W", str(so)], capture_output=True, text=True).stdout
        assert ".debug_info" not in sections and ".symtab" not in sections, sections
        dynsym = subprocess.run(
            ["readelf", "--dyn-syms", "-W", str(so)], capture_output=True, text=True
        ).stdout
        assert "PyInit_screen" in dynsym  # the import entry point survives the strip
    assert so.stat().st_size < 1_500_000, so.stat().st_size  # 3.77 MB with debug info, ~0.56 MB without


def test_sdist_normaliser_makes_rebuilds_byte_identical(tmp_path: Path) -> None:
    """The release workflow builds the sdist twice and compares: setuptools stamps build times into the tar
    and gzip headers, .github/scripts/reproducible_sdist.py takes them out without touching the content."""
    import gzip
    import tarfile

    spec = importlib.util.spec_from_file_location("reproducible_sdist", SCRIPTS / "reproducible_sdist.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def build(name: str, mtime: int) -> Path:
        tree = tmp_path / name / "pkg-1.0"
        tree.mkdir(parents=True)
        (tree / "b.py").write_text("print('b')\n")
        (tree / "a.txt").write_text("a\n")
        for f in tree.iterdir():
            os.utime(f, (mtime, mtime))
        out = tmp_path / name / "pkg-1.0.tar.gz"
        with tarfile.open(out, "w:gz") as tar:  # gzip header and members stamped with the build's times
            tar.add(tree, arcname="pkg-1.0")
        return out

    first, second = build("one", 1_700_000_000), build("two", 1_800_000_000)
    assert first.read_bytes() != second.read_bytes()
    for f in (first, second):
        mod.normalise(str(f), 1_234_567_890)
    assert first.read_bytes() == second.read_bytes()
    assert gzip.open(first).read(1)  # still a valid gzip
    with tarfile.open(first) as tar:
        assert [m.name for m in tar.getmembers()] == ["pkg-1.0", "pkg-1.0/a.txt", "pkg-1.0/b.py"]
        assert {m.mtime for m in tar.getmembers()} == {1_234_567_890}
        assert tar.extractfile("pkg-1.0/b.py").read() == b"print('b')\n"  # type: ignore[union-attr]


def _test_command_paths() -> set[str]:
    """The files and folders cibuildwheel's test-commands read from {project} (the unpacked sdist)."""
    text = (ROOT / "pyproject.toml").read_text()
    commands = re.findall(r'^test-command = "(.*)"$', text, flags=re.M)
    assert commands, "no cibuildwheel test-command in pyproject.toml"
    return {p for c in commands for p in re.findall(r"\{project\}/([\w./-]+)", c)}


def test_sdist_carries_what_the_wheel_tests_read(tmp_path: Path) -> None:
    """The release workflow builds every wheel from the sdist, so cibuildwheel's {project} is the unpacked sdist:
    the test-command's tests/fetch_fixtures.py, the suite with its conftest.py files and recordings, and the
    benchmarks and docs/protocol.md that tests read must be in it; local caches must not."""
    pytest.importorskip("build")
    tree = _tree(tmp_path, extra=("tests", "benchmarks", "docs"))
    for junk in (
        "tests/.hypothesis/examples/ab/cd",
        "tests/term/.pytest_cache/v/x",
        "benchmarks/.benchmarks/r.json",
    ):
        (tree / junk).parent.mkdir(parents=True, exist_ok=True)
        (tree / junk).write_text("local cache\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITBRIDGE_")}
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path / "dist"), str(tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        top = sdist.name[: -len(".tar.gz")]
        names = {n[len(top) + 1 :] for n in tar.getnames() if n.startswith(top + "/")}
    for needed in (
        "tests/fetch_fixtures.py",
        "tests/conftest.py",
        "tests/term/conftest.py",
        "tests/fixtures/captures/claude/README.md",
        "tests/fixtures/captures/gemini/README.md",
        "benchmarks/inputs.py",
        "src/litbridge/pty/_spawn.pyx",
        "docs/protocol.md",
        "pyproject.toml",
    ):
        assert needed in names, needed
    for path in _test_command_paths():
        assert any(n == path or n.startswith(path + "/") for n in names), f"test-command reads {path}"
    junk = [n for n in names if re.search(r"(^|/)(\.hypothesis|\.pytest_cache|\.benchmarks|__pycache__)/", n)]
    assert not junk, junk


def test_wheel_test_command_leaves_the_slow_suites_out(tmp_path: Path) -> None:
    """A `-m` on the command line replaces addopts' `-m 'not slow'`: the wheel test-command's own expression must
    deselect the slow soak/fuzz runs as well as the real-Claude ones. Checked by running pytest with it."""
    text = (ROOT / "pyproject.toml").read_text()
    (command,) = re.findall(r"^test-command = \"(.*pytest \{project\}/tests .*)\"$", text, flags=re.M)
    (expr,) = re.findall(r"-m '([^']*)'", command)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: s\n    real_claude: r\n")
    (tmp_path / "test_marks.py").write_text(
        "import pytest\n\n"
        "def test_plain(): pass\n\n"
        "@pytest.mark.slow\ndef test_soak(): pass\n\n"
        "@pytest.mark.real_claude\ndef test_claude(): pass\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", expr, "--collect-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_marks.py::test_plain" in run.stdout
    assert "test_soak" not in run.stdout and "test_claude" not in run.stdout, run.stdout
