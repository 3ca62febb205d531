"""Which `Rules`, `Record` and `Launch` read which Pi version (the driver's `kit.CliSpec`).

A live session takes the version from the header of its first frame (` pi v0.73.1`), not from `pi --version`
(a Node start). A new version: `v0_74.py` with `class Rules(v0_73.Rules)` overriding what changed, and one line
in `RULES` below.
"""

from __future__ import annotations

from typing import ClassVar

from litbridge.drivers import kit
from litbridge.drivers.pi import v0_73
from litbridge.drivers.pi.launch import Launch
from litbridge.drivers.pi.session import SessionTurns
from litbridge.drivers.versions import logo_version_re

__all__ = ["CLI", "RULES", "Record"]


class Record(kit.Record):
    """Pi 0.73's session JSONL (`session.py` reads it)."""

    VERSION = "0.73"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "session JSONL: ~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl"

    def tracker(self) -> SessionTurns:
        """A fresh mapping of this version's record to turn events (the driver's follower reads with it)."""
        return SessionTurns()


RULES: dict[str, type[v0_73.Rules]] = {"0.73": v0_73.Rules}

CLI = kit.CliSpec(
    "pi",
    rules=RULES,  # type: ignore[arg-type]
    record={"0.73": Record},
    launch={"0.73": Launch},
    logo=logo_version_re(b"pi"),
    version_from_binary=False,
    tested=("0.73.1",),
    package="@mariozechner/pi-coding-agent",
)
