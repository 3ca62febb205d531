"""Which `Rules`, `Record` and `Launch` read which Kimi Code version (the driver's `kit.CliSpec`).

A live session takes the version from the welcome box of its first frame (`Version:   2.1.0`), not from
`kimi --version` (a Node start). A new version: `v2_2.py` with `class Rules(v2_1.Rules)` overriding what changed,
and one line in `RULES` below.
"""

from __future__ import annotations

import re
from typing import ClassVar

from litbridge.drivers import kit
from litbridge.drivers.kimi import v2_1
from litbridge.drivers.kimi.launch import Launch
from litbridge.drivers.kimi.wire import WireTurns

__all__ = ["CLI", "RULES", "Record"]


class Record(kit.Record):
    """Kimi Code 2.1's wire log (`wire.py` reads it)."""

    VERSION = "2.1"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "wire JSONL: ~/.kimi-code/sessions/wd_<dir>/session_<id>/agents/main/wire.jsonl"

    def tracker(self) -> WireTurns:
        """A fresh mapping of this version's record to turn events (the driver's follower reads with it)."""
        return WireTurns()


RULES: dict[str, type[v2_1.Rules]] = {"2.1": v2_1.Rules}

LOGO = re.compile(rb"Version:(?:\s|\x1b\[[0-9;?]*[A-Za-z])*(\d+\.\d+\.\d+)")
"""The version the welcome box prints (`Version:   2.1.0`), in raw output: what a replay reads."""

CLI = kit.CliSpec(
    "kimi",
    rules=RULES,  # type: ignore[arg-type]
    record={"2.1": Record},
    launch={"2.1": Launch},
    logo=LOGO,
    version_from_binary=False,
    tested=("2.1.0",),
    package="@moonshot-ai/kimi-code",
)
