"""Which `Rules`, `Record` and `Launch` read which Copilot CLI version (the driver's `kit.CliSpec`).

The version comes from `copilot --version` before the spawn (the driver's `prepare`, cached per binary), and the
banner (`Copilot v1.0.102 uses AI.`) shows it in a recording. A new version: `v1_1.py` with
`class Rules(v1_0.Rules)` overriding what changed, and one line in `RULES` below.
"""

from __future__ import annotations

from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.copilot import v1_0
from litbridge.drivers.copilot.events import TurnTracker
from litbridge.drivers.copilot.launch import Launch
from litbridge.drivers.versions import logo_version_re

__all__ = ["CLI", "LOGO_VERSION_RE", "RULES", "Record"]


class Record(kit.Record):
    """Copilot CLI 1.0's session events (`events.py` maps them, `follow.py` follows the file)."""

    VERSION = "1.0"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "JSONL: $COPILOT_HOME (~/.copilot)/session-state/<session id>/events.jsonl"

    def tracker(self) -> Any:
        return TurnTracker()


RULES: dict[str, type[v1_0.Rules]] = {"1.0": v1_0.Rules}
"""Rules class by CLI version prefix."""

LOGO_VERSION_RE = logo_version_re(b"Copilot")
"""The version the banner prints (`Copilot v1.0.102 uses AI.`), in raw output: what a replay reads."""

CLI = kit.CliSpec(
    "copilot",
    rules=RULES,  # type: ignore[arg-type]
    record={"1.0": Record},
    launch={"1.0": Launch},
    logo=LOGO_VERSION_RE,
    tested=("1.0.102",),
    package="@github/copilot",
)
