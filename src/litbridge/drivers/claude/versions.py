"""Which `Rules` read which Claude Code version, and the version of a binary (`claude --version`).

The version is known before the first frame: `cli_version(binary)` (drivers/versions.py) runs `<binary> --version`
once per binary (cached by path, size and mtime), so a 2.1 session reads its startup dialogs with the 2.1 rules even when a
newer rules class exists. To support a new version: add `v2_2.py` with `class Rules(v2_1.Rules)` overriding
what changed, and one line in `RULES` below (see docs/adding-a-cli.md).
"""

from __future__ import annotations

from litbridge.drivers.claude import v2_1
from litbridge.drivers.versions import binary_version as cli_version
from litbridge.drivers.versions import logo_version_re, pick

__all__ = ["LOGO_VERSION_RE", "RULES", "cli_version", "rules_for"]

RULES: dict[str, type[v2_1.Rules]] = {"2.1": v2_1.Rules}
"""Rules class by version prefix ("major.minor")."""

LOGO_VERSION_RE = logo_version_re(b"Claude", b"Code")
"""The version the logo prints (2.1: `Claude`, a space or a cursor move, `Code`, colour moves, `v2.1.328`)."""


def rules_for(version: str | None) -> type[v2_1.Rules]:
    """The rules class for a CLI version (`drivers/versions.pick`: newest for an unknown one)."""
    return pick(RULES, version)
