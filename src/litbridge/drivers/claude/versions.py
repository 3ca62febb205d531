"""Which `Rules`, `Record` and `Launch` read which Claude Code version (the driver's `kit.CliSpec`).

The version is known before the first frame: the driver's `prepare` runs `<binary> --version` once per binary
(cached by path, size and mtime, in a worker thread), so a 2.1 session reads its startup dialogs with the 2.1
rules even when a newer rules class exists. To support a new version: add `v2_2.py` with
`class Rules(v2_1.Rules)` overriding what changed, and one line in `RULES` below (see docs/adding-a-cli.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.claude import v2_1
from litbridge.drivers.claude.launch import Launch
from litbridge.drivers.claude.transcript import TurnTracker
from litbridge.drivers.versions import binary_version as cli_version
from litbridge.drivers.versions import logo_version_re, pick

__all__ = ["CLI", "LOGO_VERSION_RE", "RULES", "Record", "cli_version", "rules_for"]


class Record(kit.Record):
    """Claude Code 2.1's JSONL transcript (`transcript.py` reads it, `follow.py` follows it)."""

    VERSION = "2.1"
    SHAPE: ClassVar[str] = "jsonl"
    SOURCE: ClassVar[str] = "JSONL transcript: $CLAUDE_CONFIG_DIR/projects/<project slug>/<session id>.jsonl"

    def tracker(self) -> Any:
        return TurnTracker()


RULES: dict[str, type[v2_1.Rules]] = {"2.1": v2_1.Rules}
"""Rules class by version prefix ("major.minor")."""

LOGO_VERSION_RE = logo_version_re(b"Claude", b"Code")
"""The version the logo prints (2.1: `Claude`, a space or a cursor move, `Code`, colour moves, `v2.1.328`)."""

CLI = kit.CliSpec(
    "claude",
    rules=RULES,  # type: ignore[arg-type]
    record={"2.1": Record},
    launch={"2.1": Launch},
    logo=LOGO_VERSION_RE,
    tested=("2.1.328",),
    package="@anthropic-ai/claude-code",
)


def rules_for(version: str | None) -> type[v2_1.Rules]:
    """The rules class for a CLI version (`drivers/versions.pick`: newest for an unknown one)."""
    return pick(RULES, version)
