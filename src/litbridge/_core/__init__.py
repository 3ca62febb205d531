"""Compiled terminal core (Cython): `screen` (also `native`) holds the pyte-compatible Screen, Cursor and fused Parser.

`AVAILABLE` says whether the extension can be used; `LITBRIDGE_NO_EXTENSIONS=1` forces it off (silently),
a missing build warns once and leaves callers on the pure-pyte fallback.
"""

from __future__ import annotations

import os
import warnings

AVAILABLE = False
native = None

if os.environ.get("LITBRIDGE_NO_EXTENSIONS") != "1":
    try:
        import importlib

        native = importlib.import_module(".screen", __name__)

        AVAILABLE = True
    except ImportError as exc:  # pragma: no cover - depends on the build
        warnings.warn(
            f"litbridge: compiled terminal core unavailable ({exc}); falling back to pyte", stacklevel=2
        )

__all__ = ["AVAILABLE", "native"]
