"""The Gemini CLI driver package: `GeminiDriver` (the registry's built-in "gemini") and its versioned rules.

`driver.py` holds the behaviour, `v0_61.py` the 0.61.x title/screen rules, `launch.py` the command line and
per-session settings, `versions.py` which plug-ins read which version, `chat.py` the chat JSONL side.
"""

from __future__ import annotations

from litbridge.drivers.gemini.driver import GeminiDriver

__all__ = ["GeminiDriver"]
