"""The Codex CLI driver package: `CodexDriver` (the registry's built-in "codex") and its versioned screen rules.

`driver.py` holds the behaviour (on the shared turn engine), `v0_169.py` the 0.169.x screen/title/OSC rules,
`launch.py` the command line, `versions.py` which plug-ins read which version, `rollout.py` the rollout JSONL format (paths, incremental reads, turn events) and `follow.py` the following of this
session's rollout file (which one it is, inotify + timer).
"""

from __future__ import annotations

from litbridge.drivers.codex.driver import CodexDriver

__all__ = ["CodexDriver"]
