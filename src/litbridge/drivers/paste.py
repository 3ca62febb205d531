"""Message text made safe to send inside a bracketed paste, for any CLI that reads pastes (knows no CLI)."""

from __future__ import annotations

import re

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def paste_payload(text: str) -> bytes:
    """The message as bracketed-paste content: CR/CRLF -> LF, other control bytes (ESC...) removed, so the
    text can neither end the paste early nor be taken as keys."""
    return _CONTROL_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).encode("utf-8")
