"""Kimi Code (`@moonshot-ai/kimi-code`): the driver class, imported lazily through `drivers.BUILTIN`."""

from litbridge.drivers.kimi.driver import KimiDriver

__all__ = ["KimiDriver"]
