"""Which `Rules`, `Record` and `Launch` read which Codex CLI version (the driver's `kit.CliSpec`).

A new Codex version: `v0_170.py` with `class Rules(v0_169.Rules)` overriding what changed, and one line in
`RULES` below; the version comes from `codex --version` before the spawn (the driver's `prepare`), and the header
(`>_ OpenAI Codex (v0.169.0)`) confirms it after start-up.
"""

from __future__ import annotations

from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.codex import v0_169
from litbridge.drivers.codex.launch import Launch
from litbridge.drivers.codex.rollout import TurnTracker
from litbridge.drivers.versions import logo_version_re, pick

__all__ = ["CLI", "HEADER_VERSION_RE", "RULES", "Record", "rules_for"]


class Record(kit.Record):
    """Codex 0.169's rollout JSONL (`rollout.py` reads it, `follow.py` finds and follows it)."""

    VERSION = "0.169"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "rollout JSONL: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl"

    def tracker(self) -> Any:
        return TurnTracker()


RULES: dict[str, type[v0_169.Rules]] = {"0.169": v0_169.Rules}
"""Rules class by CLI version prefix (a new Codex version: `v0_170.Rules(v0_169.Rules)` and one line here)."""

HEADER_VERSION_RE = logo_version_re(b"OpenAI", b"Codex")
"""The version the header prints (`>_ OpenAI Codex (v0.169.0)`), in raw output: what a replay reads."""

CLI = kit.CliSpec(
    "codex",
    rules=RULES,  # type: ignore[arg-type]
    record={"0.169": Record},
    launch={"0.169": Launch},
    logo=HEADER_VERSION_RE,
    tested=("0.169.0",),
    package="@openai/codex",
)


def rules_for(version: str | None) -> type[v0_169.Rules]:
    """The rules class for a CLI version (`drivers/versions.pick`: newest for an unknown one)."""
    return pick(RULES, version)
