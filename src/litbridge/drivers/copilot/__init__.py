"""The GitHub Copilot CLI driver package: `CopilotDriver` (the registry's built-in "copilot").

`driver.py` holds the behaviour (on the shared turn engine), `v1_0.py` the 1.0.x screen rules, `launch.py` the
command line, `versions.py` which plug-ins read which version, `events.py` the session's `events.jsonl` and what
its entries mean, `follow.py` the following of that file.
"""

from __future__ import annotations

from litbridge.drivers.copilot.driver import CopilotDriver

__all__ = ["CopilotDriver"]
