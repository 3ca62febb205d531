"""Drop-in replacement for `import pyte`, backed by litbridge's compiled core (`litbridge._core`).

Same names as pyte 0.8.2 (`Screen, DiffScreen, HistoryScreen, DebugScreen, Stream, ByteStream`, `dis`, and the
`screens, streams, modes, control, escape, graphics, charsets` submodules). Falls back to pyte's classes when
the extension is missing or `LITBRIDGE_NO_EXTENSIONS=1`.
"""

from __future__ import annotations

import io

from . import charsets, control, escape, graphics, modes, screens, streams
from .screens import DebugScreen, DiffScreen, HistoryScreen, Screen
from .streams import ByteStream, Stream

__all__ = [
    "ByteStream",
    "DebugScreen",
    "DiffScreen",
    "HistoryScreen",
    "Screen",
    "Stream",
    "charsets",
    "control",
    "dis",
    "escape",
    "graphics",
    "modes",
    "screens",
    "streams",
]


def dis(chars: bytes | str) -> None:
    """Print the events pyte's parser sees for `chars` (debug helper, as `pyte.dis`)."""
    if isinstance(chars, str):
        chars = chars.encode("utf-8")
    with io.StringIO() as buf:
        ByteStream(DebugScreen(to=buf)).feed(chars)
        print(buf.getvalue())
