"""OSC 7501 ("program status") interpreted once, for every CLI that emits it.

The terminal (the compiled core, or the pyte fallback in `litbridge.term`) only cuts the raw payload out of
`ESC ] 7501 ; <payload> BEL|ST` and answers the `?` probe; this module gives the payload its meaning. Claude
Code reports after the probe (`state=working:app=claude-code:msg=<base64>`), Codex CLI unprompted
(`state=idle:app=codex`), so the reading is not Claude-only knowledge (reference: claude-code §3.4, codex §3.1).

Fields are `key=value` parts separated by `:` (`;` is accepted too); `msg` and `title` are base64(UTF-8) and
come out decoded (an undecodable value is kept as sent).
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

PROBE: Final = "?"
"""The payload of the probe a program sends (and the terminal echoes back)."""

STATES: Final = ("idle", "working", "blocked", "done", "error", "clear")
"""The `state` values the CLIs were seen to report."""

BASE64_FIELDS: Final = ("msg", "title")

ProgramStatus = dict[str, str]
"""One report: its fields, `msg`/`title` decoded. `state` is absent when the report did not carry one."""


def parse(payload: str | bytes) -> ProgramStatus | None:
    """The fields of one report; None for the `?` probe or an empty payload."""
    if isinstance(payload, bytes):
        payload = payload.decode("utf-8", "replace")
    if not payload or payload == PROBE:
        return None
    fields: ProgramStatus = {}
    for part in payload.replace(";", ":").split(":"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if key in BASE64_FIELDS and value:
            value = _b64(value)
        fields[key] = value if sep else ""
    return fields or None


def _b64(value: str) -> str:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return value


def state_of(status: ProgramStatus | None) -> str | None:
    """The report's `state`, or None when there is no report or it carries no (or an unknown `?`) state."""
    if not status:
        return None
    state = status.get("state")
    return state if state and state != PROBE else None
