"""The compiled core's type stub (`_core/screen.pyi`) names exactly the public API the extension has.

mypy reads the stub, never the extension: a method the stub lacks is a type error in correct code, and one it
has but the extension lost (renamed, made private) type-checks and fails at run time. CI also runs
`mypy.stubtest` on an installed wheel (signatures); this test needs only the built extension.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from litbridge import _core

pytestmark = pytest.mark.skipif(not _core.AVAILABLE, reason="compiled core not built")

STUB = Path(_core.__file__).with_name("screen.pyi")


def _stub_names() -> dict[str, set[str]]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
            out[node.name] = {n for n in names if not n.startswith("_")}
    return out


@pytest.mark.parametrize("cls", ["Screen", "Parser", "Cursor"])
def test_stub_matches_the_extensions_public_names(cls: str) -> None:
    runtime = {n for n in dir(getattr(_core.native, cls)) if not n.startswith("_")}
    stub = _stub_names()[cls]
    assert stub - runtime == set(), f"in the stub but not in the extension: {sorted(stub - runtime)}"
    assert runtime - stub == set(), f"in the extension but not in the stub: {sorted(runtime - stub)}"


def test_stub_has_the_terminal_fast_paths() -> None:
    """The methods litbridge.term calls on the compiled screen (named in the issue that found them missing)."""
    assert {"changed_rows", "snapshot", "ansi_repaint", "line", "logical_lines", "wrapped"} <= _stub_names()[
        "Screen"
    ]
