"""Pi (`@mariozechner/pi-coding-agent`): the driver class, imported lazily through `drivers.BUILTIN`."""

from litbridge.drivers.pi.driver import PiDriver

__all__ = ["PiDriver"]
