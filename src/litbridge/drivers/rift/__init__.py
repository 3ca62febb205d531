"""The `rift --serve` driver package: `RiftDriver` (driver.py), the event mapping (mapping.py) and the transcript
rendering (render.py). The registry's built-in "rift" (`litbridge.drivers.BUILTIN`).
"""

from litbridge.drivers.rift.driver import RiftDriver

__all__ = ["RiftDriver"]
