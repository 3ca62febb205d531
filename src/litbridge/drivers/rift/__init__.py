"""The `rift --serve` driver package: `RiftDriver` (driver.py), the event mapping (mapping.py) and the transcript
rendering (render.py). Registered lazily by `litbridge.drivers` for `cli: "rift"`.
"""

from litbridge.drivers.rift.driver import RiftDriver

Driver = RiftDriver

__all__ = ["Driver", "RiftDriver"]
