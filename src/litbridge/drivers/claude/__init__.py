"""The Claude Code driver package: `ClaudeDriver` (the registry's built-in "claude").

`driver.py` plugs Claude into the turn engine; `model.py` holds the types the rules return; `v2_1.py` the
2.1.x screen rules (a class; later versions subclass it) and `versions.py` which plug-ins read which version;
`launch.py` the command line and config files; `transcript.py` + `follow.py` the JSONL side.
"""

from __future__ import annotations

from litbridge.drivers.claude.driver import ClaudeDriver

__all__ = ["ClaudeDriver"]
