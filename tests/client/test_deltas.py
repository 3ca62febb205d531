"""Streamed text as deltas: the client asks for `append` on the wire and hands its users the same `replace`
events (whole text so far) as before, also across a dropped connection and for a reader that fell behind."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _daemon import Daemon

from litbridge.client import Client, Event
from litbridge.client import client as client_mod

pytestmark = pytest.mark.asyncio

BASH = {"args": ["--norc", "--noprofile"], "env": {"PS1": "$ "}, "quiescence": 0.5}
LINES = 1500
# ~90 characters a line, printed over about a second: many `replace` updates of a growing text
SCRIPT = (
    f"for i in $(seq 1 {LINES}); do printf 'line %05d %s\\n' $i {'x' * 78}; (( i % 50 )) || sleep 0.03; done"
)


class WireKinds:
    """The event kinds the client decoded off the wire (its `decode` wrapped), per connection order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kinds: list[str] = []
        self.bytes: dict[str, int] = {}
        original = client_mod.decode

        def decode(line: bytes) -> Any:
            value = original(line)
            if isinstance(value, dict):
                kind = str(value.get("event"))
                self.kinds.append(kind)
                self.bytes[kind] = self.bytes.get(kind, 0) + len(line)
            return value

        monkeypatch.setattr(client_mod, "decode", decode)


def _texts(events: list[Event], tid: str) -> dict[int, str]:
    return {e["seq"]: e["text"] for e in events if e.get("event") == "replace" and e.get("turn_id") == tid}


async def test_turn_text_of_a_long_streamed_answer(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    wire = WireKinds(monkeypatch)
    async with (
        Client.connect(socket=daemon.socket, deltas=False) as plain,
        Client.connect(socket=daemon.socket) as c,
    ):
        assert c.supports("hello.deltas") and c.supports("append")
        ref = plain.events("long")
        got = c.events("long")
        await c.create("long", "bash", timeout=60, **BASH)
        turn = await c.send("long", SCRIPT)
        done = await turn.result(timeout=120)
        await plain.ping()
        await c.ping()
        ref.close()
        got.close()
        ref_events = [e async for e in ref]
        got_events = [e async for e in got]
        await c.kill("long")
    content = done["content"]
    assert content.splitlines()[-1].startswith(f"line {LINES:05d}") and len(content.splitlines()) >= LINES
    assert turn.text == content
    mine = [e for e in turn._events if e.get("event") == "replace"]
    assert mine and all("delta" in e for e in mine), "rebuilt from append events"
    assert "append" in wire.kinds
    # every rebuilt text equals the full text the daemon sent a replace client for the same seq
    ref_texts, got_texts = _texts(ref_events, turn.turn_id), _texts(got_events, turn.turn_id)
    both = set(got_texts) & set(ref_texts)  # either may have had updates coalesced away
    assert both and all(got_texts[s] == ref_texts[s] for s in both)
    assert got_texts[max(got_texts)] == ref_texts[max(ref_texts)] == content
    # the appends carry about the answer once (plus each line's envelope), however the updates were coalesced;
    # (how many bytes the replace client got depends on how much the load coalesced away: not compared)
    envelope = 300 * wire.kinds.count("append")
    assert wire.bytes["append"] < 2 * len(content.encode()) + envelope, wire.bytes


async def test_a_dropped_delta_client_rebuilds_the_text_after_reconnecting(
    daemon: Daemon, tmp_path: Path
) -> None:
    """The connection drops mid-answer; the new one is sent the text afresh (offset 0), then deltas again."""
    async with (
        Client.connect(socket=daemon.socket, deltas=False) as plain,
        Client.connect(socket=daemon.socket, reconnect_timeout=60) as c,
    ):
        ref = plain.events("drop")
        got = c.events("drop")
        await plain.create("drop", "bash", timeout=60, **BASH)
        turn = await plain.send("drop", SCRIPT)
        mid = await got.wait_for(lambda e: e.get("event") == "replace" and len(e["text"]) > 20_000, 60)
        c._drop_connection()
        done = await turn.result(timeout=120)
        await asyncio.wait_for(c.ping(), 60)
        assert c.reconnects == 1
        ref.close()
        got.close()
        ref_events = [e async for e in ref]
        got_events = [mid] + [e async for e in got]
        await plain.kill("drop")
    ref_texts, got_texts = _texts(ref_events, turn.turn_id), _texts(got_events, turn.turn_id)
    both = set(got_texts) & set(ref_texts)
    assert both and all(got_texts[s] == ref_texts[s] for s in both)
    last = max(got_texts)
    assert got_texts[last] == ref_texts[max(ref_texts)]
    assert any(e["event"] == "complete" and e["content"] == done["content"] for e in got_events)
