"""Shared fixtures for the emulator tests: the implementation under test and the byte-stream corpora.

Owns where the inputs come from (pyte's captured streams from the fetched sdist, the real Claude recordings)
and the `emu_input` parametrisation. It does not compare anything; the test modules do.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent


def _load_fetch_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("litbridge_fetch_fixtures", TESTS / "fetch_fixtures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fetch_fixtures = _load_fetch_fixtures()
PYTE_DIR: Path = fetch_fixtures.PYTE_DIR
PYTE_TESTS = PYTE_DIR / "tests"
CAPTURES = Path(os.environ.get("LITBRIDGE_CAPTURES", ROOT.parent / "shared" / "captures"))


@cache
def pyte_captured() -> dict[str, bytes]:
    """pyte's `tests/captured/*.input` streams (80x24 captures, replayed here at any size)."""
    folder = PYTE_TESTS / "captured"
    return {p.stem: p.read_bytes() for p in sorted(folder.glob("*.input"))} if folder.is_dir() else {}


@cache
def claude_recordings() -> dict[str, bytes]:
    """Each real Claude Code recording: its base64 PTY chunks concatenated in order (byte-exact output)."""
    out: dict[str, bytes] = {}
    for path in sorted(CAPTURES.glob("*/chunks.jsonl")):
        with path.open() as fh:
            out[path.parent.name] = b"".join(base64.b64decode(json.loads(line)["b64"]) for line in fh if line.strip())
    return out


def emulator_inputs() -> dict[str, bytes]:
    """Every differential input, keyed `pyte-<name>` / `claude-<name>`."""
    inputs = {f"pyte-{k}": v for k, v in pyte_captured().items()}
    inputs.update({f"claude-{k}": v for k, v in claude_recordings().items()})
    return inputs


def import_litbridge_pyte() -> ModuleType:
    try:
        return importlib.import_module("litbridge.pyte")
    except ImportError as exc:
        pytest.skip(f"litbridge.pyte is not importable yet: {exc}")


def is_real_pyte(mod: ModuleType) -> bool:
    """True when `mod` is (or just re-exports) real pyte's classes, i.e. the no-extension fallback."""
    import pyte

    return getattr(mod, "Screen", None) is pyte.Screen


@pytest.fixture(scope="session")
def pyte_tests_dir() -> Path:
    """The pyte 0.8.2 sdist's `tests/` folder (may be absent; users skip with the reason)."""
    return PYTE_TESTS


@pytest.fixture(scope="session")
def litbridge_pyte() -> ModuleType:
    """The implementation under test; skips when the facade does not exist yet."""
    return import_litbridge_pyte()


@pytest.fixture(scope="session")
def native_pyte(litbridge_pyte: ModuleType) -> ModuleType:
    """`litbridge.pyte` backed by the compiled core; skips when it is the pure-pyte fallback."""
    if is_real_pyte(litbridge_pyte):
        pytest.skip("litbridge.pyte is the pyte fallback (extension not built or LITBRIDGE_NO_EXTENSIONS=1)")
    return litbridge_pyte


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise `emu_input` (name, bytes) over every available corpus stream."""
    if "emu_input" in metafunc.fixturenames:
        inputs = emulator_inputs()
        if not inputs:
            metafunc.parametrize("emu_input", [pytest.param(None, marks=pytest.mark.skip(
                reason=f"no inputs: pyte sdist missing at {PYTE_TESTS} (run tests/fetch_fixtures.py) "
                f"and no captures at {CAPTURES}"))], ids=["no-inputs"])
            return
        metafunc.parametrize("emu_input", list(inputs.items()), ids=list(inputs))
