"""The driver registry: `cli` name -> Driver class; unknown CLIs get the generic driver.

One style: built-ins are a lazy table of "module:Class" strings (`BUILTIN`), imported on first use so a broken
or missing driver package never breaks the daemon for other CLIs. `register(name, cls)` is the public extension
point for drivers that live outside this package (an embedding application, a test): call it before the first
`create` of that CLI; a registered class wins over a built-in of the same name. The contract lives in
`drivers/base.py`; adding a CLI is described in docs/adding-a-cli.md.
"""

from __future__ import annotations

import importlib
import logging
import os

from litbridge.drivers.base import Driver, DriverError, DriverHost, LaunchSpec

__all__ = ["BUILTIN", "Driver", "DriverError", "DriverHost", "LaunchSpec", "clis", "get_driver", "register"]

log = logging.getLogger(__name__)

BUILTIN: dict[str, str] = {
    "claude": "litbridge.drivers.claude.driver:ClaudeDriver",
    "codex": "litbridge.drivers.codex.driver:CodexDriver",
    "copilot": "litbridge.drivers.copilot.driver:CopilotDriver",
    "gemini": "litbridge.drivers.gemini.driver:GeminiDriver",
    "kimi": "litbridge.drivers.kimi.driver:KimiDriver",
    "pi": "litbridge.drivers.pi.driver:PiDriver",
    "opencode": "litbridge.drivers.opencode.driver:OpencodeDriver",
    "qwen": "litbridge.drivers.qwen.driver:QwenDriver",
    "rift": "litbridge.drivers.rift.driver:RiftDriver",
}
"""Built-in drivers: `cli` name -> "module:Class"."""

_REGISTRY: dict[str, type[Driver]] = {}


def register(name: str, cls: type[Driver]) -> None:
    """Make `cls` the driver of `cli` name `name` (later registrations win; a built-in of that name is shadowed)."""
    if not (isinstance(cls, type) and issubclass(cls, Driver)):
        raise TypeError(f"register({name!r}, ...) needs a Driver subclass, got {cls!r}")
    _REGISTRY[name] = cls


def _load(name: str) -> type[Driver] | None:
    """The built-in driver class for `name`, imported now (None, logged, when it cannot be)."""
    target = BUILTIN.get(name)
    if target is None:
        return None
    modname, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(modname), attr)
    except (ImportError, AttributeError) as exc:
        log.warning("driver %r unavailable (%s); using the generic driver", name, exc)
        return None
    _REGISTRY[name] = cls
    result: type[Driver] = cls
    return result


def get_driver(cli: str) -> type[Driver]:
    """Driver class for `cli`: its basename (`/usr/bin/claude` -> claude) is looked up; else generic."""
    base = os.path.basename(cli)
    if base.endswith(".exe") or base.endswith(".cmd"):
        base = base[:-4]
    for name in (cli, base):
        cls = _REGISTRY.get(name) or _load(name)
        if cls is not None:
            return cls
    from litbridge.drivers.generic import GenericDriver

    return GenericDriver


def clis() -> list[str]:
    """CLI names with a dedicated driver (for `monitor_ready.clis`); any other program uses generic."""
    return sorted(set(_REGISTRY) | set(BUILTIN))
