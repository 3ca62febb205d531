"""The Claude Code driver package: `ClaudeDriver` (registered as "claude") and its versioned screen rules.

`driver.py` holds the behaviour, `v2_1.py` the 2.1.x screen knowledge, `transcript.py` the JSONL side and
`replay.py` the capture replayer used by `litbridge replay` and the tests.
"""

from __future__ import annotations

from litbridge.drivers import register
from litbridge.drivers.claude.driver import ClaudeDriver

DRIVER = ClaudeDriver
register("claude", ClaudeDriver)

__all__ = ["DRIVER", "ClaudeDriver"]
