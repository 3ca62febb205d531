"""litbridge.client against a real daemon subprocess: every command, the turn handle, filters, errors.

Sessions run bash / python3 under the generic driver (a turn completes when the screen goes quiet).
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from _daemon import Daemon

from litbridge.client import Client, DaemonNotRunning, LitbridgeError, Turn

pytestmark = pytest.mark.asyncio

BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "env": {"PS1": "$ "}, "quiescence": 0.3}
PY = {"cli": sys.executable, "args": ["-q", "-u", "-i"], "env": {"PYTHONSTARTUP": ""}, "quiescence": 0.3}


async def _create(c: Client, name: str, spec: dict) -> dict:
    spec = dict(spec)
    cli = spec.pop("cli")
    return await c.create(name, cli, timeout=60, **spec)


async def test_connect_handshake_and_ping(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        info = c.server_info
        assert info["event"] == "monitor_ready"
        assert info["protocol_version"] == 1
        assert c.supports("send") and c.supports("complete") and not c.supports("no_such_thing")
        pong = await c.ping()
        assert pong["event"] == "pong"
        assert pong["re"].startswith(c._id_prefix)


async def test_no_daemon_is_a_friendly_error(tmp_path) -> None:
    path = tmp_path / "nobody.sock"
    with pytest.raises(DaemonNotRunning) as info:
        async with Client.connect(socket=path):
            pass
    assert info.value.code == "no_daemon"
    assert str(path) in info.value.message and "litbridge serve" in info.value.message


async def test_create_send_turn_handle(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        ready = await _create(c, "turns", BASH)
        assert ready["event"] == "ready" and ready["session"] == "turns"
        again = await _create(c, "turns", BASH)
        assert again.get("reused") is True

        turn = await c.send("turns", "echo one; echo two")
        assert isinstance(turn, Turn) and turn.turn_id and turn.session == "turns"
        kinds = []
        async for ev in turn:
            kinds.append(ev["event"])
            if ev.get("turn_id") is not None:
                assert ev["turn_id"] == turn.turn_id
        assert kinds[0] == "accepted"
        assert kinds[-1] == "complete"
        assert "state" in kinds
        done = await turn.result(timeout=5)
        assert done is turn.terminal
        assert done["content"].splitlines() == ["one", "two"]
        assert turn.text == done["content"]
        # A second iteration replays the same events; result() after the end returns at once.
        assert [ev["event"] async for ev in turn] == kinds


async def test_result_and_iteration_concurrently(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "concurrent", BASH)
        turn = await c.send("concurrent", "echo a; echo b")

        async def collect() -> list[str]:
            return [ev["event"] async for ev in turn]

        events, result = await asyncio.gather(collect(), turn.result(timeout=60))
        assert events[-1] == "complete" and result["event"] == "complete"
        assert result["content"].splitlines() == ["a", "b"]


async def test_queued_sends_keep_order(daemon: Daemon, tmp_path) -> None:
    gate = tmp_path / "gate"
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "queue", BASH)
        # the first turn runs until the test opens the gate (bash's prompt mark ends a turn at once, so
        # `echo first` alone could complete before the second send arrives on a loaded box)
        first = await c.send("queue", f"while [ ! -e {gate} ]; do sleep 0.05; done; echo first")
        second = await c.send("queue", "echo second")
        assert second.queued is True
        gate.touch()
        r1 = await first.result(timeout=60)
        r2 = await second.result(timeout=60)
        assert r1["turn_id"] != r2["turn_id"]
        assert r1["content"].strip() == "first"
        assert r2["content"].strip() == "second"
        # a queued turn's handle sees the state change that starts it (it names the turn it belongs to)
        states = [ev async for ev in second if ev["event"] == "state"]
        assert states and states[0]["to"] == "thinking" and states[0]["turn_id"] == second.turn_id
        assert {ev.get("turn_id") async for ev in first if ev["event"] == "state"} == {first.turn_id}


async def test_send_with_same_msg_id_is_not_delivered_twice(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "dedupe", BASH)
        t1 = await c.send("dedupe", "echo once", msg_id="dedupe-msg-1")
        await t1.result(timeout=60)
        t2 = await c.send("dedupe", "echo once", msg_id="dedupe-msg-1")
        assert t2.turn_id == t1.turn_id
        assert t2.accepted.get("duplicate") is True


async def test_input_keystroke_dump_list_kill(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "misc", BASH)
        sent = await c.input("misc", "echo typed-$((40+2))")
        assert sent["event"] == "input_sent"
        for _ in range(100):
            dump = await c.dump("misc")
            if "typed-42" in dump["capture"]:
                break
            await asyncio.sleep(0.05)
        assert "typed-42" in dump["capture"]
        assert dump["event"] == "dump" and dump["state"] in ("idle", "responding", "thinking")

        ks = await c.keystroke("misc", ["C-u", "Enter"])
        assert ks["event"] == "keystroke_sent" and ks["keys"] == ["C-u", "Enter"]
        single = await c.keystroke("misc", "Enter")
        assert single["keys"] == ["Enter"]
        with pytest.raises(LitbridgeError) as bad:
            await c.keystroke("misc", ["NoSuchKey"])
        assert bad.value.code == "bad_key"

        names = {s["name"]: s for s in await c.list()}
        assert names["misc"]["state"] in ("idle", "responding", "thinking")
        assert names["misc"]["cli"] == "bash"

        killed = await c.kill("misc")
        assert killed["event"] == "killed" and killed["session"] == "misc"
        assert "misc" not in {s["name"] for s in await c.list()}
        with pytest.raises(LitbridgeError) as gone:
            await c.dump("misc")
        assert gone.value.code == "session_not_found"
        assert gone.value.event is not None and gone.value.event["event"] == "error"


async def test_interrupt_ends_the_turn_interrupted(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "intr", PY)
        # Prints forever (never quiet), so only the interrupt can end the turn.
        turn = await c.send(
            "intr", "[(print('tick', i, flush=True), __import__('time').sleep(0.05)) for i in range(10**6)]"
        )
        async for ev in turn:
            if ev["event"] == "replace" and "tick 3" in ev["text"]:
                break
        assert not turn.done
        reply = await c.interrupt("intr")
        assert reply["event"] == "interrupted" and reply["turn_id"] == turn.turn_id
        done = await turn.result(timeout=30)
        assert done["event"] == "interrupted"
        with pytest.raises(LitbridgeError) as none:
            await c.interrupt("intr")
        assert none.value.code  # no turn is running: an error, not silence


async def test_answer_without_question_is_an_error(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "ans", BASH)
        with pytest.raises(LitbridgeError) as info:
            await c.answer("ans", question_id="q-does-not-exist", digit=1)
        assert info.value.code == "no_question"
        with pytest.raises(LitbridgeError) as info:
            await c.answer("ans", digit="12")
        assert info.value.code == "bad_field"


async def test_event_stream_filters(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        await _create(c, "filt-a", BASH)
        await _create(c, "filt-b", BASH)
        only_a_states = c.events("filt-a", kinds={"state"})
        everything = c.events()
        tb = await c.send("filt-b", "echo b")
        ta = await c.send("filt-a", "echo a")
        await asyncio.gather(ta.result(timeout=60), tb.result(timeout=60))
        by_turn = c.events(turn=ta)  # registered late: sees nothing of the finished turn
        only_a_states.close()
        everything.close()
        a_states = [ev async for ev in only_a_states]
        assert a_states and all(ev["event"] == "state" and ev["session"] == "filt-a" for ev in a_states)
        seen = [ev async for ev in everything]
        assert {ev["session"] for ev in seen if "session" in ev} >= {"filt-a", "filt-b"}
        by_turn.close()
        assert [ev async for ev in by_turn] == []


async def test_hello_subscribe_limits_sessions(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as boss, Client.connect(socket=daemon.socket) as c:
        await _create(boss, "sub-x", BASH)
        await _create(boss, "sub-y", BASH)
        caps = await c.hello(subscribe=["sub-x"])
        assert caps["event"] == "capabilities" and caps["subscribed"] == ["sub-x"]
        stream = c.events()
        ty = await boss.send("sub-y", "echo y")
        tx = await boss.send("sub-x", "echo x")
        await asyncio.gather(tx.result(timeout=60), ty.result(timeout=60))
        await c.ping()  # a round trip: everything broadcast before it has reached `c`
        stream.close()
        sessions = {ev.get("session") for ev in [ev async for ev in stream] if ev.get("seq")}
        assert sessions == {"sub-x"}


async def test_request_timeout_and_unknown_command(daemon: Daemon) -> None:
    async with Client.connect(socket=daemon.socket) as c:
        with pytest.raises(LitbridgeError) as info:
            await c.request("frobnicate")
        assert info.value.code == "unknown_command"
        with pytest.raises(LitbridgeError) as info:
            await c.request("send", {"session": "nope", "content": "x"})
        assert info.value.code == "session_not_found"


async def test_closed_client_fails_pending_work(daemon: Daemon) -> None:
    c = await Client.connect(socket=daemon.socket, reconnect=False)
    stream = c.events()
    await c.close()
    with pytest.raises(LitbridgeError) as info:
        await stream.next(timeout=5)
    assert info.value.code == "connection_lost"
    with pytest.raises(LitbridgeError):
        await c.ping()


async def test_litbridge_socket_is_the_default_address(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like `serve` and the CLI, `Client.connect()` without socket= uses $LITBRIDGE_SOCKET when it is set."""
    from litbridge.client import default_socket_path

    monkeypatch.delenv("LITBRIDGE_SOCKET", raising=False)
    assert default_socket_path().name == "litbridge.sock"
    monkeypatch.setenv("LITBRIDGE_SOCKET", daemon.socket)
    assert str(default_socket_path()) == daemon.socket
    async with Client.connect() as c:
        assert (await c.ping())["event"] == "pong"


class _Holder:
    """What a `Turn` reads of its client: the events it kept (`_recent`), its turns and open questions."""

    def __init__(self, recent: list[tuple[int, dict]]) -> None:
        self._recent = recent
        self._turns: set[Turn] = set()
        self._questions: dict[str, dict] = {}


async def test_a_turn_made_after_its_question_arrived_still_yields_it() -> None:
    """The CLI asks at once: its `question` (a session event, no `turn_id`) can reach the client before the
    handle exists (a fleet delivers `accepted` and the stream by different paths). The handle takes the session's
    events newer than its `accepted`, and not older ones (another turn's) nor other sessions'."""
    old = {"event": "question", "session": "s", "seq": 3, "question_id": "q0", "kind": "x", "text": "old"}
    mine = {"event": "question", "session": "s", "seq": 6, "question_id": "q1", "kind": "x", "text": "Pick"}
    other = {"event": "question", "session": "t", "seq": 7, "question_id": "q2", "kind": "x", "text": "no"}
    kept = [(n, e) for n, e in enumerate((old, mine, other), 1) if Turn.remembers(e)]
    accepted = {"event": "accepted", "session": "s", "seq": 5, "turn_id": "t1", "queued": False}
    turn = Turn(_Holder(kept), accepted, "s")  # type: ignore[arg-type]
    assert [e.get("question_id") for e in turn._events if e["event"] == "question"] == ["q1"]
    queued = Turn(_Holder(kept), {**accepted, "turn_id": "t2", "queued": True}, "s")  # type: ignore[arg-type]
    assert [e["event"] for e in queued._events] == ["accepted"], "a queued turn's session is another turn's"
    # a restarted daemon numbers afresh: what arrived before the send went out is another run's
    late = Turn(_Holder(kept), {**accepted, "turn_id": "t3"}, "s", since=2)  # type: ignore[arg-type]
    assert [e["event"] for e in late._events] == ["accepted"]
