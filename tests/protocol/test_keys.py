"""The named-key table: lit-bridge-rs names, tmux aliases, C-/M- forms, unknown names rejected."""

from __future__ import annotations

import pytest

from litbridge.keys import KEY_NAMES, BadKey, encode_key, encode_keys, is_key


def test_rs_conformance_line_14() -> None:
    keys = ["Up", "Down", "Right", "Left", "Enter", "Esc", "Tab", "Space"]
    assert encode_keys(keys) == b"\x1b[A\x1b[B\x1b[C\x1b[D\r\x1b\t "


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("Escape", b"\x1b"),
        ("BSpace", b"\x7f"),
        ("Backspace", b"\x7f"),
        ("BTab", b"\x1b[Z"),
        ("S-Tab", b"\x1b[Z"),
        ("Home", b"\x1b[H"),
        ("End", b"\x1b[F"),
        ("PageUp", b"\x1b[5~"),
        ("PPage", b"\x1b[5~"),
        ("PageDown", b"\x1b[6~"),
        ("NPage", b"\x1b[6~"),
        ("Delete", b"\x1b[3~"),
        ("DC", b"\x1b[3~"),
        ("C-a", b"\x01"),
        ("C-c", b"\x03"),
        ("C-z", b"\x1a"),
        ("C-C", b"\x03"),
        ("enter", b"\r"),
        ("F1", b"\x1bOP"),
        ("F12", b"\x1b[24~"),
        ("M-x", b"\x1bx"),
        ("M-Enter", b"\x1b\r"),
        ("2", b"2"),
        ("é", "é".encode()),
    ],
)
def test_aliases(name: str, data: bytes) -> None:
    assert encode_key(name) == data


def test_every_documented_name_encodes() -> None:
    for name in KEY_NAMES:
        assert is_key(name), name


@pytest.mark.parametrize("bad", ["Bogus", "", "C-", "C-ab", "Enterr", "M-"])
def test_unknown_names_raise(bad: str) -> None:
    with pytest.raises(BadKey):
        encode_key(bad)


def test_encode_keys_is_all_or_nothing() -> None:
    with pytest.raises(BadKey) as info:
        encode_keys(["Up", "Nope", "Down"])
    assert info.value.name == "Nope"
