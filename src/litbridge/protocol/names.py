"""Session names and channel ids: the one rule they follow on the wire and the one way they are shown.

Names are client-chosen and end up in other people's terminals (CLI messages, attach refusals, tables), so the
daemon refuses control characters in them and every printer escapes what it shows anyway (a name may come from
an older daemon, or be one the daemon refused and echoes back in its error).
"""

from __future__ import annotations

import re

# C0 (U+0000-U+001F), DEL (U+007F) and C1 (U+0080-U+009F): what a terminal may act on instead of printing.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def control_character(name: str) -> str | None:
    """The first control character (C0, DEL, C1) in `name`, or None when it has none."""
    m = _CONTROL.search(name)
    return m.group() if m else None


def shown(name: str) -> str:
    """`name` for a terminal: unchanged when every character is printable, else Python-escaped (`\\x1b`,
    `\\n`, `\\u200b`), so a name can never drive the terminal that prints a message about it."""
    return name if name.isprintable() else repr(name)[1:-1]
