"""The `Fleet` client and the CLI's `--nats` mode against a real nats-server and real `litbridge serve --nats`
daemons: listing across daemons, placement, turns streamed from JetStream, answer / interrupt / kill, replay
from a seq, a dead daemon, and `create.env` refused over plaintext. Every event the client decodes (replies
and stream messages) is checked against `litbridge schema`.
"""

from __future__ import annotations

import asyncio
import datetime as _real_datetime
import os
import subprocess
import sys
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
from _daemon import write_rift
from fleet_helpers import read_stream
from lbd_helpers import check_event

from litbridge.client import Client, LitbridgeError
from litbridge.fleet import client as fleet_client
from litbridge.fleet import subjects
from litbridge.fleet.client import Fleet, FleetEventStream

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]

BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "working_dir": "/tmp"}
WAIT = 60.0  # generous: the test box is loaded
T = TypeVar("T")


@pytest.fixture
def rift_env(tmp_path: Path) -> dict[str, str]:
    """A `rift` wrapper around the fake rift (it asks questions on `[ask:...]`), as tests/client/_daemon.py does."""
    rift = write_rift(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    return {"LITBRIDGE_RIFT_BIN": str(rift), "FAKE_RIFT_SPEED": "0", "HOME": str(home)}


async def until(
    probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool], what: str, timeout: float = WAIT
) -> T:
    """Poll `probe` until `ok(value)`; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    value = await probe()
    while not ok(value):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s; last: {value!r}")
        await asyncio.sleep(0.2)
        value = await probe()
    return value


async def joined(url: str, fleet_daemons: Any, n: int, *args: str, **options: Any) -> list[Any]:
    """`fleet_daemons(n, ...)`, then wait until they are live in the registry (a daemon joins NATS after its
    socket listens)."""
    daemons = await asyncio.to_thread(fleet_daemons, n, *args, **options)
    names = {d.name for d in daemons}
    async with Fleet.connect(url) as fleet:
        await until(
            fleet.daemons,
            lambda ds: names <= {d["daemon"] for d in ds if d["available"]},
            f"daemons {sorted(names)} joined",
        )
    return daemons


def named(sessions: list[dict[str, Any]], daemon: str, name: str) -> dict[str, Any] | None:
    return next((s for s in sessions if s.get("daemon") == daemon and s.get("name") == name), None)


def lb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", *args], capture_output=True, text=True, timeout=timeout
    )


async def test_list_create_send_kill_across_daemons(nats_server: Any, fleet_daemons: Any) -> None:
    """Sessions of every daemon are listed with daemon and host; `send` through the fleet streams the turn and
    ends with the exact output the local socket gives for the same command; kill removes it from the list."""
    _, d1 = await joined(nats_server.url, fleet_daemons, 2)
    async with Fleet.connect(nats_server.url) as fleet:
        r0 = await fleet.create("sh", on="d0", **BASH)
        r1 = await fleet.create("d1/sh", **BASH)  # DAEMON/SESSION works too
        assert (r0["event"], r0["daemon"], r1["daemon"]) == ("ready", "d0", "d1")
        both = await until(
            fleet.list,
            lambda s: named(s, "d0", "sh") is not None and named(s, "d1", "sh") is not None,
            "both sessions in the registry",
        )
        for s in both:
            assert s["available"] is True and s["host"] and s["cli"] == "bash", s

        turn = await fleet.send("d1/sh", "echo fleet-$((6*7)); echo second line")
        events = [ev async for ev in turn]
        assert events[0]["event"] == "accepted" and events[-1]["event"] == "complete", events
        assert events[-1]["content"] == "fleet-42\nsecond line"
        assert [ev for ev in events if ev["event"] in ("complete", "interrupted", "turn_error")] == [
            events[-1]
        ]
        assert all(ev["session"] == "sh" for ev in events)

        async with Client.connect(socket=d1.socket) as local:  # the same command over the local socket
            local_turn = await local.send("sh", "echo fleet-$((6*7)); echo second line")
            assert (await local_turn.result(WAIT))["content"] == events[-1]["content"]

        killed = await fleet.kill("d0/sh")
        assert killed["event"] == "killed" and killed["session"] == "sh"
        await until(
            fleet.list, lambda s: named(s, "d0", "sh") is None, "the killed session leaves the registry"
        )
        assert named(await fleet.list(), "d1", "sh") is not None
        with pytest.raises(LitbridgeError) as missing:
            await fleet.send("d0/sh", "echo nobody")
        assert missing.value.code == "session_not_found"


async def test_input_keystroke_dump_ping_request_through_the_fleet(
    nats_server: Any, fleet_daemons: Any
) -> None:
    """`Fleet` has `Client`'s `input`, `keystroke`, `ping` and `request`: typed input runs in the session (its
    output is on the screen `dump` shows), a Ctrl-C keystroke stops a running command, a raw `request` reaches
    the daemon named by `daemon=` or by a `DAEMON/SESSION`."""
    await joined(nats_server.url, fleet_daemons, 2)
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("in", on="d1", **BASH)
        assert (await fleet.ping("d1"))["event"] == "pong"

        def lines(dump: dict[str, Any]) -> list[str]:
            return [line.strip() for line in dump["capture"].splitlines()]

        sent = await fleet.input("d1/in", "echo typed-$((3*4))")
        assert sent["event"] == "input_sent" and sent["session"] == "in", sent
        await until(
            lambda: fleet.dump("d1/in"), lambda d: "typed-12" in lines(d), "the typed command's output"
        )

        await fleet.input("d1/in", "sleep 120")
        await asyncio.sleep(0.5)
        keys = await fleet.keystroke("in", "C-c", daemon="d1")
        assert keys["event"] == "keystroke_sent" and keys["keys"] == ["C-c"], keys
        await fleet.input("d1/in", "echo after-$((40+2))")  # runs only once the sleep is interrupted
        await until(lambda: fleet.dump("d1/in"), lambda d: "after-42" in lines(d), "the command after Ctrl-C")

        listed = await fleet.request("list", daemon="d1")
        assert listed["event"] == "sessions" and [s["name"] for s in listed["sessions"]] == ["in"]
        dump = await fleet.request("dump", {"session": "d1/in"})
        assert dump["event"] == "dump" and "after-42" in lines(dump)
        with pytest.raises(LitbridgeError) as missing:
            await fleet.input("d0/in", "echo nobody")  # the session lives on d1
        assert missing.value.code == "session_not_found"
        with pytest.raises(LitbridgeError) as unnamed:
            await fleet.request("list")
        assert unnamed.value.code == "bad_usage"


async def test_placement_fewest_sessions_and_labels(nats_server: Any, fleet_daemons: Any) -> None:
    (gpu,) = await joined(nats_server.url, fleet_daemons, 1, "--label", "gpu=1")
    (plain,) = await joined(nats_server.url, fleet_daemons, 1)
    async with Fleet.connect(nats_server.url) as fleet:
        await until(fleet.daemons, lambda ds: len([d for d in ds if d["available"]]) == 2, "two live daemons")
        await fleet.create("one", on=gpu.name, **BASH)
        await until(
            fleet.daemons,
            lambda ds: any(d["daemon"] == gpu.name and d.get("sessions") == 1 for d in ds),
            "the session counted in the registry",
        )
        placed = await fleet.create("two", **BASH)
        assert placed["daemon"] == plain.name  # the daemon with the fewest sessions
        labelled = await fleet.create("three", labels={"gpu": "1"}, **BASH)
        assert labelled["daemon"] == gpu.name  # only it has the label, though it has more sessions
        with pytest.raises(LitbridgeError) as none:
            await fleet.create("four", labels={"gpu": "2"}, **BASH)
        assert none.value.code == "no_daemon"


async def first(turn: Any, match: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    """The turn's first event that matches, within WAIT; else a failure that lists the events seen (a lost
    event fails here, with its seq gap in view, instead of at the test's timeout)."""
    seen: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(WAIT):
            async for ev in turn:
                seen.append(ev)
                if match(ev):
                    return ev
    except TimeoutError:
        pass
    raise AssertionError(f"{what}: not among the turn's events within {WAIT} s: {seen}")


async def test_answer_and_interrupt_through_the_fleet(
    nats_server: Any, fleet_daemons: Any, rift_env: dict[str, str]
) -> None:
    """The fake rift asks a question; it is answered through the fleet and the turn completes with the choice.
    A long turn is interrupted through the fleet and ends with `interrupted`."""
    await joined(nats_server.url, fleet_daemons, 2, env=rift_env)
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("asker", "rift", on="d1", working_dir="/tmp")
        turn = await fleet.send("d1/asker", "hello [ask:Pick a colour|red|blue]")
        question = await first(turn, lambda ev: ev["event"] == "question", "the question")
        assert question["text"].startswith("Pick a colour"), question
        await until(
            fleet.list,
            lambda s: isinstance((named(s, "d1", "asker") or {}).get("question"), dict),
            "the open question in the registry",
        )
        sent = await fleet.answer("d1/asker", question_id=question["question_id"], option="blue")
        assert sent["event"] == "answer_sent"
        done = await turn.result(WAIT)
        assert done["event"] == "complete" and "blue" in done["content"], done

        long_turn = await fleet.send("d1/asker", "go [long]")
        await first(
            long_turn,
            lambda ev: (
                ev["event"] in ("replace", "thinking") or (ev["event"] == "state" and ev["to"] == "thinking")
            ),
            "the long turn under way",
        )
        await fleet.interrupt("d1/asker")
        end = await long_turn.result(WAIT)
        assert end["event"] == "interrupted", end


async def test_events_since_replays_without_gap_or_duplicate(nats_server: Any, fleet_daemons: Any) -> None:
    """`events(daemon, since=K)` replays exactly the daemon's stored events after seq K, in order, then follows
    live ones with no gap; other daemons' events are not mixed in."""
    await joined(nats_server.url, fleet_daemons, 2)
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("ev", on="d0", **BASH)
        await fleet.create("ev", on="d1", **BASH)
        for i in range(3):
            await (await fleet.send("d0/ev", f"echo round {i}")).result(WAIT)
            await (await fleet.send("d1/ev", f"echo other {i}")).result(WAIT)
        stored = [m for m in await read_stream(fleet.js) if m.daemon == "d0" and "seq" in m.event]
        seqs = [m.event["seq"] for m in stored]
        since = seqs[len(seqs) // 3]
        want = [m.event for m in stored if m.event["seq"] > since]

        # the replay starts where it should, found by bisection over the stream (not by reading it all)
        probe = FleetEventStream(
            fleet, "d0", since=since, session=None, kinds=None, follow=False, daemon_id=None
        )
        start = await probe._start_seq()
        assert start is not None
        first = await fleet.js.get_msg(subjects.stream("default"), start)
        assert int(first.headers[subjects.SEQ_HEADER]) == want[0]["seq"] and first.subject.startswith(
            "litbridge.default.ev.d0."
        )

        stream = await fleet.events("d0", since=since, follow=False)
        got = [ev async for ev in stream]
        assert [ev["seq"] for ev in got] == [ev["seq"] for ev in want]
        assert len({ev["seq"] for ev in got}) == len(got)
        assert all(ev["daemon"] == "d0" for ev in got)
        assert [{k: v for k, v in ev.items() if k != "daemon"} for ev in got] == want

        follow = await fleet.events("d0", since=seqs[-1])  # caught up: only new events from here
        async with follow:
            turn = await fleet.send("d0/ev", "echo live")
            done = await turn.result(WAIT)
            live: list[dict[str, Any]] = []
            while not live or live[-1].get("seq") != done["seq"]:
                live.append(await follow.next(WAIT))
        live_seqs = [ev["seq"] for ev in live]
        assert live_seqs[0] == seqs[-1] + 1 and live_seqs == list(range(live_seqs[0], done["seq"] + 1)), (
            live_seqs
        )

        with pytest.raises(LitbridgeError) as bad:
            await fleet.events(since=1)  # seqs are per daemon
        assert bad.value.code == "bad_usage"


def production_ttl() -> float:
    """The registry TTL a daemon uses when nothing overrides it (the `fleet_daemons` fixture shortens it)."""
    env = {k: v for k, v in os.environ.items() if k != "LITBRIDGE_FLEET_TTL"}
    code = "from litbridge.fleet.config import REGISTRY_TTL; print(REGISTRY_TTL)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


async def renewed(fleet: Fleet, daemon: str) -> None:
    """Return as soon as `daemon` re-puts its registry entry (its next heartbeat)."""
    kv = await fleet.js.key_value(subjects.bucket(fleet.name))
    watcher = await kv.watch(subjects.daemon_key(daemon))
    try:
        current = await watcher.updates(timeout=WAIT)  # the entry as it is now
        while True:
            entry = await watcher.updates(timeout=WAIT)
            if entry is not None and entry.revision != getattr(current, "revision", None):
                return
    finally:
        await watcher.stop()


async def test_dead_daemon_listed_unavailable_and_commands_name_it(
    nats_server: Any, fleet_daemons: Any
) -> None:
    """With the production TTL and heartbeat: a new session is in the fleet view within 15 s of its create, a
    SIGKILLed daemon's sessions are shown unavailable within 15 s (the issue's bounds), the others unaffected."""
    ttl = production_ttl()
    _, d1 = await joined(nats_server.url, fleet_daemons, 2, env={"LITBRIDGE_FLEET_TTL": str(ttl)})
    async with Fleet.connect(nats_server.url) as fleet:
        assert {d["daemon"]: d["ttl"] for d in await fleet.daemons()} == {"d0": ttl, "d1": ttl}
        await fleet.create("keep", on="d0", **BASH)
        t0 = time.monotonic()
        await fleet.create("doomed", on="d1", **BASH)
        await until(fleet.list, lambda s: named(s, "d1", "doomed") is not None, "d1's session listed")
        listed_after = time.monotonic() - t0
        await renewed(fleet, "d1")  # killed right after a heartbeat: the worst case, a whole TTL to wait
        d1.kill()  # SIGKILL: no goodbye to NATS, its registry entries just stop being renewed
        t0 = time.monotonic()

        async def view() -> tuple[list[dict[str, Any]], dict[str, bool]]:
            return await fleet.list(), {d["daemon"]: d["available"] for d in await fleet.daemons()}

        sessions, _ = await until(
            view,
            lambda v: (named(v[0], "d1", "doomed") or {}).get("available") is False and not v[1]["d1"],
            "d1 gone and its session marked unavailable",
        )
        gone_after = time.monotonic() - t0
        print(f"fleet bounds (ttl {ttl} s): session listed {listed_after:.2f} s after create, dead daemon")
        print(f"  seen as gone {gone_after:.2f} s after SIGKILL")
        # the bounds; on a loaded machine the margins are the create (a bash start, well under a second
        # when idle) and the registry read after the TTL ran out (milliseconds when idle)
        assert listed_after <= 15.0 and gone_after <= 15.0, (listed_after, gone_after)
        assert named(sessions, "d0", "keep")["available"] is True
        assert {d["daemon"]: d["available"] for d in await fleet.daemons()} == {"d0": True, "d1": False}
        with pytest.raises(LitbridgeError) as dead:
            await fleet.send("d1/doomed", "echo hi")
        assert dead.value.code == "daemon_unavailable" and "'d1'" in dead.value.message
        with pytest.raises(LitbridgeError) as placed:
            await fleet.create("new", on="d1", **BASH)
        assert "'d1'" in placed.value.message
        assert (await fleet.create("elsewhere", **BASH))["daemon"] == "d0"  # placement skips the dead one


async def test_env_refused_over_plaintext_unless_opted_in(nats_server: Any, fleet_daemons: Any) -> None:
    """The client never sends `create.env` over a connection without TLS unless allowed explicitly."""
    (d0,) = await joined(
        nats_server.url, fleet_daemons, 1
    )  # started with --nats-allow-plaintext-env: only the client's refusal is tested
    async with Fleet.connect(nats_server.url) as fleet:
        assert fleet.tls is False
        with pytest.raises(LitbridgeError) as refused:
            await fleet.create("secret", on="d0", env={"API_KEY": "sk-123"}, **BASH)
        assert refused.value.code == "plaintext_env"
        assert all(s["name"] != "secret" for s in await fleet.daemon("d0").list())
        assert "sk-123" not in d0.log()
    async with Fleet.connect(nats_server.url, allow_plaintext_env=True) as fleet:
        ready = await fleet.create("secret", on="d0", env={"LB_FLEET_PROBE": "ok"}, **BASH)
        assert ready["event"] == "ready"
        turn = await fleet.send("d0/secret", "echo $LB_FLEET_PROBE")
        assert (await turn.result(WAIT))["content"] == "ok"
    cli = await asyncio.to_thread(
        lb, "create", "secret2", "--cli", "bash", "--env", "A=1", "--nats", nats_server.url, "--on", "d0"
    )
    assert cli.returncode == 1 and "without TLS" in cli.stderr, cli.stderr


async def test_cli_nats_list_send_events_and_dead_daemon(nats_server: Any, fleet_daemons: Any) -> None:
    _, d1 = await joined(nats_server.url, fleet_daemons, 2)
    url = nats_server.url
    made = await asyncio.to_thread(
        lb, "create", "cli1", "--cli", "bash", "--arg=--norc", "--nats", url, "--on", "d1"
    )
    assert made.returncode == 0 and "d1/cli1: ready" in made.stdout, made.stderr
    async with Fleet.connect(url) as fleet:
        await until(fleet.list, lambda s: named(s, "d1", "cli1") is not None, "cli1 listed")
    listed = await asyncio.to_thread(lb, "list", "--nats", url)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "cli1" in line)
    assert row.split()[0] == "d1" and "yes" in row, row
    listed_global = await asyncio.to_thread(lb, "--nats", url, "list", "--json")  # the syntax
    assert listed_global.returncode == 0, listed_global.stderr
    rows = orjson.loads(listed_global.stdout)["sessions"]
    assert [(s["daemon"], s["name"]) for s in rows] == [("d1", "cli1")], rows

    sent = await asyncio.to_thread(lb, "send", "d1/cli1", "echo via-$((40+2))", "--nats", url, "--json")
    assert sent.returncode == 0, sent.stderr
    evs = [orjson.loads(line) for line in sent.stdout.splitlines()]
    for ev in evs:
        check_event(ev)
    assert evs[0]["event"] == "accepted" and evs[-1]["event"] == "complete" and evs[-1]["content"] == "via-42"
    failed = await asyncio.to_thread(lb, "send", "d1/cli1", "false", "--nats", url)
    assert failed.returncode == 1  # the shell command's own status, as with the socket

    replay = await asyncio.to_thread(
        lb, "events", "--nats", url, "--daemon", "d1", "--since", "0", "--no-follow", "--json"
    )
    assert replay.returncode == 0, replay.stderr
    seqs = [orjson.loads(line)["seq"] for line in replay.stdout.splitlines() if '"seq"' in line]
    assert seqs == sorted(set(seqs)) and evs[-1]["seq"] in seqs

    idle = await asyncio.to_thread(lb, "interrupt", "d1/cli1", "--nats", url)
    assert idle.returncode == 1 and "[no_turn]" in idle.stderr, idle.stderr
    unasked = await asyncio.to_thread(lb, "answer", "d1/cli1", "--digit", "1", "--nats", url)
    assert unasked.returncode == 1 and "[no_question]" in unasked.stderr, unasked.stderr

    # the same `events` subcommand on the daemon's own socket: its buffered events after seq 0, then live ones
    local = subprocess.Popen(  # noqa: ASYNC220 (runs beside the test)
        [sys.executable, "-m", "litbridge", "events", "--since", "0", "--json", "--socket", d1.socket],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen: list[dict[str, Any]] = []
        while not any(ev.get("seq") == evs[-1]["seq"] for ev in seen):
            line = await asyncio.wait_for(asyncio.to_thread(local.stdout.readline), WAIT)  # type: ignore[union-attr]
            assert line, local.stderr.read()  # type: ignore[union-attr]
            seen.append(orjson.loads(line))
            check_event(seen[-1])
    finally:
        local.terminate()
        local.wait(30)

    d1.kill()
    dead = await asyncio.to_thread(lb, "send", "d1/cli1", "echo hi", "--nats", url)
    assert dead.returncode == 1 and "'d1'" in dead.stderr and "not answering" in dead.stderr, dead.stderr
    bad = await asyncio.to_thread(lb, "send", "no-slash", "hi", "--nats", url)
    assert bad.returncode == 1 and "DAEMON/SESSION" in bad.stderr


async def test_a_killed_runs_leftover_session_is_unavailable_after_a_restart(
    nats_server: Any, fleet_daemons: Any
) -> None:
    """A daemon SIGKILLed and started again under the same name is live, and the sessions of the killed run are
    never listed as available sessions of it (it sweeps them on joining; until then the client sees that they are
    not renewed)."""
    (old,) = await joined(nats_server.url, fleet_daemons, 1, names=["dx"])
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("old", on="dx", **BASH)
        await until(fleet.list, lambda s: named(s, "dx", "old") is not None, "the session listed")
        old.kill()
        await until(
            fleet.daemons, lambda ds: not any(d["available"] for d in ds), "the killed daemon seen as gone"
        )
        await joined(nats_server.url, fleet_daemons, 1, names=["dx"])
        await fleet.create("new", on="dx", **BASH)
        sessions = await until(
            fleet.list,
            lambda s: (named(s, "dx", "new") or {}).get("available") is True,
            "the new session live",
        )
        assert (await fleet.daemons())[0]["available"] is True
        assert (named(sessions, "dx", "old") or {}).get("available") is not True, sessions


class _AnyDatetime(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _real_datetime.datetime)


def skew_client_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The fleet client's wall clock (`datetime.datetime.now`) runs `seconds` off; nothing else changes."""

    class Skewed(_real_datetime.datetime, metaclass=_AnyDatetime):
        @classmethod
        def now(cls, tz: Any = None) -> _real_datetime.datetime:  # type: ignore[override]
            return _real_datetime.datetime.now(tz) + _real_datetime.timedelta(seconds=seconds)

    fake = types.SimpleNamespace(
        datetime=Skewed, timezone=_real_datetime.timezone, timedelta=_real_datetime.timedelta
    )
    monkeypatch.setattr(fleet_client, "datetime", fake)


async def test_liveness_does_not_depend_on_the_clients_clock(
    nats_server: Any, fleet_daemons: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registry ages are measured on the server's clock: a client an hour ahead still sees a live daemon live,
    and a client an hour behind still sees a killed one gone."""
    _, d1 = await joined(nats_server.url, fleet_daemons, 2)
    async with Fleet.connect(nats_server.url) as fleet:
        await fleet.create("s", on="d1", **BASH)
        await until(fleet.list, lambda s: named(s, "d1", "s") is not None, "the session listed")
        skew_client_clock(monkeypatch, 3600.0)
        assert {d["daemon"]: d["available"] for d in await fleet.daemons()} == {"d0": True, "d1": True}
        assert named(await fleet.list(), "d1", "s")["available"] is True
        skew_client_clock(monkeypatch, -3600.0)
        d1.kill()
        await until(
            fleet.daemons,
            lambda ds: {d["daemon"]: d["available"] for d in ds} == {"d0": True, "d1": False},
            "the killed daemon gone, the other live",
        )
        assert named(await fleet.list(), "d1", "s")["available"] is False
