"""The Codex CLI driver package: `CodexDriver` (registered as "codex") and its versioned screen rules.

`driver.py` holds the behaviour (on the shared turn engine), `v0_169.py` the 0.169.x screen/title/OSC rules,
`rollout.py` the rollout JSONL format (paths, incremental reads, turn events) and `follow.py` the following of this
session's rollout file (which one it is, inotify + timer).
"""

from __future__ import annotations

from litbridge.drivers import register
from litbridge.drivers.codex.driver import CodexDriver

DRIVER = CodexDriver
register("codex", CodexDriver)

__all__ = ["DRIVER", "CodexDriver"]
