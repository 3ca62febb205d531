"""Dropped as `conftest.py` into a copy of pyte 0.8.2's `tests/`: makes `import pyte` resolve to $PYTE_IMPL.

Aliases `pyte` and `pyte.<sub>` for the submodules the suite imports to the implementation's modules, falling
back to real pyte's pure-data modules where the implementation has none. It never edits the tests themselves.
$PYTE_SUITE_BREAK=rstrip-display swaps in a Screen whose `display` right-strips, to prove the harness can fail.
"""

from __future__ import annotations

import importlib
import os
import sys

IMPL_NAME = os.environ.get("PYTE_IMPL", "litbridge.pyte")
SUBMODULES = ("screens", "streams", "modes", "control", "escape", "graphics", "charsets")

# Import the implementation (which may itself import real pyte) and real pyte's submodules *before* aliasing.
impl = importlib.import_module(IMPL_NAME)
real = {sub: importlib.import_module(f"pyte.{sub}") for sub in SUBMODULES}
resolved: dict[str, str] = {}
for sub in SUBMODULES:
    try:
        mod = importlib.import_module(f"{IMPL_NAME}.{sub}")
    except ImportError:
        mod = getattr(impl, sub, None)
        if not hasattr(mod, "__name__"):
            mod = real[sub]
    resolved[sub] = mod.__name__
    sys.modules[f"pyte.{sub}"] = mod
    if not hasattr(impl, sub):
        setattr(impl, sub, mod)  # `pyte.screens` attribute access must work like the import
sys.modules["pyte"] = impl

if os.environ.get("PYTE_SUITE_BREAK") == "rstrip-display":
    _Base = impl.Screen

    class RstripScreen(_Base):  # type: ignore[misc,valid-type]
        """Deliberately wrong: pyte's display is padded to `columns`, this one is not."""

        @property
        def display(self):  # type: ignore[override]
            return [row.rstrip() for row in _Base.display.__get__(self)]

    impl.Screen = RstripScreen


def pytest_report_header(config):
    """Printed in the run's header so the outer test can assert which implementation really ran."""
    return [
        f"pyte-impl: {IMPL_NAME} Screen={impl.Screen.__module__}.{impl.Screen.__qualname__}",
        "pyte-submodules: " + " ".join(f"{k}={v}" for k, v in resolved.items()),
    ]
