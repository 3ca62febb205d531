"""The Gemini CLI driver package: `GeminiDriver` (registered as "gemini") and its versioned rules.

`driver.py` holds the behaviour, `v0_61.py` the 0.61.x title/screen knowledge, `chat.py` the chat JSONL side.
"""

from __future__ import annotations

from litbridge.drivers import register
from litbridge.drivers.gemini.driver import GeminiDriver

DRIVER = GeminiDriver
register("gemini", GeminiDriver)

__all__ = ["DRIVER", "GeminiDriver"]
