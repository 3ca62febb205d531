"""The named-key table (lit-bridge-rs names plus tmux names) -> the bytes a terminal program reads.

Used by `keystroke`, by drivers and by attach. Names are matched case-insensitively (as tmux does);
a single character types itself; `C-x` is Ctrl, `M-x` is Meta (ESC prefix). Anything else is unknown:
`encode_keys` raises `BadKey` before anything is typed. No win32-input-mode encoding lives here.
"""

from __future__ import annotations

from collections.abc import Iterable

_CSI = "\x1b["

_NAMED: dict[str, str] = {
    "enter": "\r",
    "return": "\r",
    "esc": "\x1b",
    "escape": "\x1b",
    "tab": "\t",
    "btab": _CSI + "Z",
    "s-tab": _CSI + "Z",
    "space": " ",
    "bspace": "\x7f",
    "backspace": "\x7f",
    "up": _CSI + "A",
    "down": _CSI + "B",
    "right": _CSI + "C",
    "left": _CSI + "D",
    "home": _CSI + "H",
    "end": _CSI + "F",
    "pageup": _CSI + "5~",
    "ppage": _CSI + "5~",
    "pgup": _CSI + "5~",
    "pagedown": _CSI + "6~",
    "npage": _CSI + "6~",
    "pgdn": _CSI + "6~",
    "delete": _CSI + "3~",
    "dc": _CSI + "3~",
    "insert": _CSI + "2~",
    "ic": _CSI + "2~",
    "f1": "\x1bOP",
    "f2": "\x1bOQ",
    "f3": "\x1bOR",
    "f4": "\x1bOS",
    "f5": _CSI + "15~",
    "f6": _CSI + "17~",
    "f7": _CSI + "18~",
    "f8": _CSI + "19~",
    "f9": _CSI + "20~",
    "f10": _CSI + "21~",
    "f11": _CSI + "23~",
    "f12": _CSI + "24~",
    "c-space": "\x00",
    "c-@": "\x00",
    "c-[": "\x1b",
    "c-\\": "\x1c",
    "c-]": "\x1d",
    "c-^": "\x1e",
    "c-_": "\x1f",
}
for _i, _c in enumerate("abcdefghijklmnopqrstuvwxyz"):
    _NAMED[f"c-{_c}"] = chr(_i + 1)

KEY_NAMES: tuple[str, ...] = (
    *"Enter Esc Escape Tab BTab Space BSpace Up Down Left Right Home End PageUp PageDown Delete".split(),
    *(f"C-{c}" for c in "abcdefghijklmnopqrstuvwxyz"),
)
"""The documented names (the protocol's list); aliases in `_NAMED` are accepted too."""


class BadKey(ValueError):
    """An unknown key name; carries the offending name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown key name: {name!r}")
        self.name = name


def encode_key(name: str) -> bytes:
    """Bytes for one key name; raises BadKey for unknown names."""
    if not isinstance(name, str) or not name:
        raise BadKey(str(name))
    if len(name) == 1:
        return name.encode("utf-8")
    low = name.lower()
    seq = _NAMED.get(low)
    if seq is not None:
        return seq.encode()
    if low.startswith("m-") and len(name) > 2:
        return b"\x1b" + encode_key(name[2:])
    if low.startswith("c-") and len(name) == 3 and name[2].isalpha():
        return chr(ord(name[2].lower()) - 96).encode()
    raise BadKey(name)


def encode_keys(names: Iterable[str]) -> bytes:
    """All keys encoded, or BadKey for the first unknown one (so nothing is typed on error)."""
    return b"".join(encode_key(n) for n in names)


def is_key(name: str) -> bool:
    try:
        encode_key(name)
    except BadKey:
        return False
    return True
