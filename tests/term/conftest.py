"""Shared fixtures for the emulator tests: the implementation under test and the byte-stream corpora.

Owns where the inputs come from (pyte's captured streams from the fetched sdist, the real Claude recordings)
and the `emu_input` parametrisation. It does not compare anything; the test modules do.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
import random
import sys
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
    sys.modules[spec.name] = mod  # registered first: its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


fetch_fixtures = _load_fetch_fixtures()
PYTE_DIR: Path = fetch_fixtures.PYTE_DIR
PYTE_TESTS = PYTE_DIR / "tests"
CAPTURES: Path = fetch_fixtures.CAPTURES


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
            out[path.parent.name] = b"".join(
                base64.b64decode(json.loads(line)["b64"]) for line in fh if line.strip()
            )
    return out


_WIDE = "日本語のテキスト中文文本한국어텍스트🎉🚀✅👍"
_CLUSTERS = (
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "❤\ufe0f",
    "e\u0301",
    "a\u0308",
    "中\u0301",
    "\u200b",
    "🏳\ufe0f\u200d🌈",
    "o" + "".join(chr(0x300 + i % 0x30) for i in range(40)),  # zalgo: past the per-cell cap (D13)
)


def _synth_unicode(size: int = 40_000, seed: int = 11) -> bytes:
    """Wrapped lines mixing ASCII, CJK, emoji and grapheme clusters (incl. wide chars hitting the last column)."""
    rng = random.Random(seed)
    out, total = [], 0
    while total < size:
        parts = []
        for _ in range(rng.randint(5, 120)):
            r = rng.random()
            parts.append(
                rng.choice(_CLUSTERS)
                if r < 0.1
                else rng.choice(_WIDE)
                if r < 0.45
                else f"\x1b[{rng.choice((1, 2, 3, 4, 7, 31, 92, 0))}m"
                if r < 0.5
                else "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(1, 12)))
            )
        line = "".join(parts) + "\x1b[0m\r\n"
        out.append(line)
        total += len(line.encode())
    return "".join(out).encode()


_FUZZ_VOCAB = (
    "\x1b[{r};{c}H",
    "\x1b[{n}A",
    "\x1b[{n}B",
    "\x1b[{n}C",
    "\x1b[{n}D",
    "\x1b[{n}E",
    "\x1b[{n}F",
    "\x1b[{c}G",
    "\x1b[{r}d",
    "\x1b[{k}J",
    "\x1b[{e}K",
    "\x1b[{n}@",
    "\x1b[{n}P",
    "\x1b[{n}X",
    "\x1b[{n}L",
    "\x1b[{n}M",
    "\x1b[{r};{r2}r",
    "\x1b[r",
    "\x1bM",
    "\x1bD",
    "\x1bE",
    "\x1b7",
    "\x1b8",
    "\x1bH",
    "\x1b[g",
    "\x1b[3g",
    "\t",
    "\x08",
    "\r",
    "\n",
    "\x1b[4h",
    "\x1b[4l",
    "\x1b[?7l",
    "\x1b[?7h",
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b[{s}m",
    "\x1b[38;5;{b}m",
    "\x1b[48;2;{b};{b};{b}m",
    "\x1b[0m",
    "\x1b]0;t{n}\x07",
    "\x1b]2;title {n}\x1b\\",
    "\x1b]8;;http://x/{n}\x07link\x1b]8;;\x07",
    "\x1b[?2026h",
    "\x1b[?2026l",
    "\x1b[?1049h",
    "\x1b[?1049l",
    "\x1b[?47h",
    "\x1b[?47l",
    "\x1b[>4;2m",
    "\x1bPq{n}\x1b\\",
    "\x1b#8",
)


def _synth_fuzz(size: int = 60_000, seed: int = 12) -> bytes:
    """Seeded random mix of well-formed control sequences and text (wide chars, clusters) on a 200x50 screen."""
    rng = random.Random(seed)
    out, total = [], 0
    while total < size:
        if rng.random() < 0.55:
            tok = rng.choice(_FUZZ_VOCAB).format(
                r=rng.randint(0, 52),
                r2=rng.randint(0, 52),
                c=rng.randint(0, 205),
                n=rng.randint(0, 60),
                k=rng.randint(0, 3),
                e=rng.randint(0, 2),
                s=rng.choice((0, 1, 2, 3, 4, 5, 7, 9, 22, 24, 27, 31, 42, 95, 105, "1;4")),
                b=rng.randint(0, 255),
            )
        else:
            tok = "".join(
                rng.choice(_WIDE)
                if rng.random() < 0.2
                else rng.choice(_CLUSTERS)
                if rng.random() < 0.05
                else rng.choice("xyz ABC-")
                for _ in range(rng.randint(1, 250))
            )
        out.append(tok)
        total += len(tok.encode())
    return "".join(out).encode()


def _load_bench_inputs() -> ModuleType | None:
    path = ROOT / "benchmarks" / "inputs.py"
    spec = importlib.util.spec_from_file_location("litbridge_bench_inputs", path)
    if spec is None or spec.loader is None or not path.is_file():
        return None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def synthetic() -> dict[str, bytes]:
    """Deterministic synthetic streams: the benchmark generators (Claude-like redraws, scroll regions) + unicode/fuzz."""
    out = {"unicode": _synth_unicode(), "fuzz": _synth_fuzz()}
    bench = _load_bench_inputs()
    if bench is not None:
        out["fullredraw"] = b"".join(bench.full_redraw_frames(4))
        out["diffredraw"] = b"".join(bench.full_redraw_frames(1) + bench.diff_frames(40))
        out["scroll"] = bench.scroll_heavy(60_000)
    return out


def emulator_inputs() -> dict[str, bytes]:
    """Every differential input, keyed `pyte-<name>` / `claude-<name>` / `synth-<name>`."""
    inputs = {f"pyte-{k}": v for k, v in pyte_captured().items()}
    inputs.update({f"claude-{k}": v for k, v in claude_recordings().items()})
    inputs.update({f"synth-{k}": v for k, v in synthetic().items()})
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
            metafunc.parametrize(
                "emu_input",
                [
                    pytest.param(
                        None,
                        marks=pytest.mark.skip(
                            reason=f"no inputs: pyte sdist missing at {PYTE_TESTS} (run tests/fetch_fixtures.py) "
                            f"and no captures at {CAPTURES}"
                        ),
                    )
                ],
                ids=["no-inputs"],
            )
            return
        metafunc.parametrize("emu_input", list(inputs.items()), ids=list(inputs))
