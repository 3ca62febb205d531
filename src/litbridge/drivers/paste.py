"""Message text made safe to send inside a bracketed paste, for any CLI that reads pastes (knows no CLI)."""

from __future__ import annotations

import re

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def bracketed(text: str) -> bytes:
    """The whole bracketed paste of `text`: no control byte inside can end it early."""
    return PASTE_START + paste_payload(text) + PASTE_END


def paste_payload(text: str) -> bytes:
    """The message as bracketed-paste content: CR/CRLF -> LF, other control bytes (ESC...) removed, so the
    text can neither end the paste early nor be taken as keys."""
    return _CONTROL_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).encode("utf-8")
