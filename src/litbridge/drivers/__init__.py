"""The driver registry: `cli` name -> Driver class; unknown CLIs get the generic driver.

Built-ins ("claude", "codex", "gemini", "rift") are imported lazily on first use so a broken or missing
driver package never breaks the daemon for other CLIs. The contract lives in `drivers/base.py`.
"""

from __future__ import annotations

import importlib
import logging
import os

from litbridge.drivers.base import Driver, DriverError, DriverHost, LaunchSpec

__all__ = ["Driver", "DriverError", "DriverHost", "LaunchSpec", "clis", "get_driver", "register"]

log = logging.getLogger(__name__)

_REGISTRY: dict[str, type[Driver]] = {}
# name -> "module:attribute" (attribute optional: the module's `Driver` / `DRIVER` / first Driver subclass)
_LAZY: dict[str, str] = {
    "claude": "litbridge.drivers.claude",
    "codex": "litbridge.drivers.codex",
    "gemini": "litbridge.drivers.gemini",
    "rift": "litbridge.drivers.rift",
}


def register(name: str, cls: type[Driver]) -> None:
    """Register a driver class for a `cli` name (later registrations win)."""
    _REGISTRY[name] = cls


def _load_lazy(name: str) -> type[Driver] | None:
    target = _LAZY.get(name)
    if target is None:
        return None
    modname, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(modname)
    except ImportError as exc:
        log.warning("driver %r unavailable (%s); using the generic driver", name, exc)
        return None
    if name in _REGISTRY:  # the module registered itself on import
        return _REGISTRY[name]
    for candidate in (attr, "DRIVER", "Driver", f"{name.capitalize()}Driver"):
        cls = getattr(mod, candidate, None) if candidate else None
        if isinstance(cls, type) and issubclass(cls, Driver) and cls is not Driver:
            _REGISTRY[name] = cls
            return cls
    log.warning("driver module %s exposes no Driver subclass; using the generic driver", modname)
    return None


def get_driver(cli: str) -> type[Driver]:
    """Driver class for `cli`: its basename (`/usr/bin/claude` -> claude) is looked up; else generic."""
    base = os.path.basename(cli)
    if base.endswith(".exe") or base.endswith(".cmd"):
        base = base[:-4]
    for name in (cli, base):
        if name in _REGISTRY:
            return _REGISTRY[name]
        cls = _load_lazy(name)
        if cls is not None:
            return cls
    from litbridge.drivers.generic import GenericDriver

    return GenericDriver


def clis() -> list[str]:
    """CLI names with a dedicated driver (for `monitor_ready.clis`); any other program uses generic."""
    return sorted(set(_REGISTRY) | set(_LAZY))
