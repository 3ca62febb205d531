"""Which `Rules`, `Record` and `Launch` read which Gemini CLI version (the driver's `kit.CliSpec`).

A live session takes the version from the header of its first frame (`Gemini CLI v0.61.0`, drawn before any
dialog), not from `gemini --version`, which costs a 2.5 s Node start. A new version: `v0_62.py` with
`class Rules(v0_61.Rules)` overriding what changed, and one line in `RULES` below.
"""

from __future__ import annotations

from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.gemini import v0_61
from litbridge.drivers.gemini.chat import ChatTurns
from litbridge.drivers.gemini.launch import Launch
from litbridge.drivers.versions import logo_version_re, pick

__all__ = ["CLI", "HEADER_VERSION_RE", "RULES", "Record", "rules_for"]


class Record(kit.Record):
    """Gemini CLI 0.61's chat JSONL (`chat.py` reads it; records re-appended whole when they change)."""

    VERSION = "0.61"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "chat JSONL: ~/.gemini/tmp/<project>/chats/session-<date>T<HH-MM>-<id8>.jsonl"

    def tracker(self) -> Any:
        return ChatTurns()


RULES: dict[str, type[v0_61.Rules]] = {"0.61": v0_61.Rules}
"""Rules class by CLI version prefix."""

HEADER_VERSION_RE = logo_version_re(b"Gemini", b"CLI")
"""The version the header prints (`Gemini CLI v0.61.0`), in raw output: what a replay reads."""

CLI = kit.CliSpec(
    "gemini",
    rules=RULES,  # type: ignore[arg-type]
    record={"0.61": Record},
    launch={"0.61": Launch},
    logo=HEADER_VERSION_RE,
    version_from_binary=False,
    tested=("0.61.0",),
    package="@google/gemini-cli",
)


def rules_for(version: str | None) -> type[v0_61.Rules]:
    """The rules class for a CLI version (`drivers/versions.pick`: newest for an unknown one)."""
    return pick(RULES, version)
