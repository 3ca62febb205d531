"""Which `Rules`, `Record` and `Launch` read which opencode version (the driver's `kit.CliSpec`).

The first frame shows the version (the home screen's last row ends with `1.18.33`), so `opencode --version` (a
second start of the binary, seconds on a busy machine) is not asked. A new version: `v1_19.py` with
`class Rules(v1_18.Rules)` overriding what changed, and one line in `RULES` below.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.opencode import v1_18
from litbridge.drivers.opencode.launch import Launch
from litbridge.drivers.opencode.store import SessionTurns

__all__ = ["CLI", "LOGO_VERSION_RE", "RULES", "Record"]


class Record(kit.Record):
    """opencode 1.18's SQLite session store (`store.py` says what its rows mean, `follow.py` follows them)."""

    VERSION = "1.18"
    SHAPE: ClassVar[str] = "sqlite"
    SOURCE: ClassVar[str] = "SQLite: ~/.local/share/opencode/opencode.db (table `event`: messages and parts)"

    def tracker(self) -> Any:
        return SessionTurns()


RULES: dict[str, type[v1_18.Rules]] = {"1.18": v1_18.Rules}

LOGO_VERSION_RE = re.compile(
    rb"(?:OpenCode|commands)(?:\x1b\[[0-9;?]*[A-Za-z]|[ \x00-\x1f])*(?:OpenCode )?(\d+\.\d+\.\d+)"
)
"""The version in raw output (`• OpenCode 1.18.33`, or the home screen's `... 1.18.33`): what a replay reads."""

CLI = kit.CliSpec(
    "opencode",
    rules=RULES,  # type: ignore[arg-type]
    record={"1.18": Record},
    launch={"1.18": Launch},
    logo=LOGO_VERSION_RE,
    version_from_binary=False,
    tested=("1.18.33",),
    package="opencode-ai",
)
