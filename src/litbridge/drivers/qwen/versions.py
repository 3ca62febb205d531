"""Which `Rules`, `Record` and `Launch` read which Qwen Code version (the driver's `kit.CliSpec`).

A live session takes the version from the header of its first frame (`Qwen Code (v0.24.4)`). A new version:
`v0_25.py` with `class Rules(v0_24.Rules)` overriding what changed, and one line in `RULES` below.
"""

from __future__ import annotations

from typing import Any, ClassVar

from litbridge.drivers import kit
from litbridge.drivers.gemini import versions as gemini_versions
from litbridge.drivers.qwen import v0_24
from litbridge.drivers.qwen.chats import QwenChatTurns
from litbridge.drivers.qwen.launch import Launch
from litbridge.drivers.versions import logo_version_re

__all__ = ["CLI", "HEADER_VERSION_RE", "RULES", "Record"]


class Record(gemini_versions.Record):
    """Qwen Code 0.24's chat JSONL (`chats.py`): one immutable entry per line, no turn-end entry (as Gemini's)."""

    VERSION = "0.24"
    SOURCE: ClassVar[str] = (
        "chat JSONL: ~/.qwen/projects/<cwd with - for non-alphanumerics>/chats/<session id>.jsonl"
    )

    def tracker(self) -> Any:
        return QwenChatTurns()


RULES: dict[str, type[v0_24.Rules]] = {"0.24": v0_24.Rules}

HEADER_VERSION_RE = logo_version_re(b"Qwen", b"Code")
"""The version the header prints (`Qwen Code (v0.24.4)`), in raw output: what a replay reads."""

CLI = kit.CliSpec(
    "qwen",
    rules=RULES,  # type: ignore[arg-type]
    record={"0.24": Record},
    launch={"0.24": Launch},
    logo=HEADER_VERSION_RE,
    version_from_binary=False,  # `qwen --version` needs Node >= 22 on the PATH; the first frame shows it
    tested=("0.24.4",),
    package="@qwen-code/qwen-code",
)
