"""The NATS account/permission layout of docs/fleet.md "Security", run exactly as documented (the test reads it
from the doc, with its file paths pointed at a throwaway CA and store): daemons and the operator do their work
through it with no permission violation, and a daemon's credentials can neither act for another daemon nor read
commands or replies meant for others. Every event the fleet client decodes is checked against `litbridge schema`.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from fleet_helpers import WAIT, TlsFiles, _wait, read_stream, registry

from litbridge.client import LitbridgeError
from litbridge.fleet import subjects
from litbridge.fleet.client import Fleet
from litbridge.fleet.config import FleetConfig

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "fleet.md"
DAEMONS = ["build-7", "build-8"]  # build-7 is the doc's daemon user; build-8 is "one such user per daemon"
PASSWORDS = {
    "BUILD7_PASS": "pw-build-7",
    "BUILD8_PASS": "pw-build-8",
    "OPERATOR_PASS": "pw-operator",
    "OBSERVER_PASS": "pw-observer",
}
BASH = {"cli": "bash", "args": ["--norc", "--noprofile"], "working_dir": "/tmp"}


def documented_block() -> str:
    """The nats-server configuration shown under "Accounts and permissions" in docs/fleet.md."""
    text = DOC.read_text()
    after = text[text.index("**Accounts and permissions.**") :]
    match = re.search(r"```\n(.*?)```", after, re.S)
    assert match, "docs/fleet.md: no configuration block after 'Accounts and permissions'"
    return match.group(1)


def documented_layout(store: Path, tls: TlsFiles) -> str:
    """The documented block, its paths pointed at the test's store and certificates, and the daemon user
    repeated for each of DAEMONS as the block says ("one such user per daemon"); nothing else changed."""
    block = documented_block()
    paths = {
        "/var/lib/nats": str(store),
        "/etc/nats/server.pem": str(tls.cert),
        "/etc/nats/server-key.pem": str(tls.key),
        "/etc/nats/ca.pem": str(tls.ca),
    }
    for path, ours in paths.items():
        assert path in block, f"docs/fleet.md's layout no longer names {path}: update this test"
        block = block.replace(path, ours)
    start, end = block.index("{ user: build-7,"), block.index("# one such user per daemon")
    entry = block[start:end]
    users = "".join(
        entry.replace("build-7", d).replace("BUILD7", d.upper().replace("-", "")) for d in DAEMONS
    )
    block = block[:start] + users + block[end:]
    # "A read-only observer is the operator without litbridge.default.cmd.*"
    start = block.index("{ user: operator,")
    end = block.index("} }", start) + len("} }")
    operator = block[start:end]
    assert '"litbridge.default.cmd.*", ' in operator, operator
    observer = operator.replace("operator", "observer").replace("OPERATOR", "OBSERVER")
    observer = observer.replace('"litbridge.default.cmd.*", ', "")
    return block[:end] + "\n      " + observer + block[end:]


@pytest.fixture
def nats_config(tmp_path: Path, tls_files: TlsFiles) -> str:
    return documented_layout(tmp_path / "jetstream", tls_files)


@pytest.fixture
def nats_env() -> dict[str, str]:
    return PASSWORDS  # the block's $BUILD7_PASS ... resolve from the server's environment


def url_of(server: Any, user: str) -> str:
    password = PASSWORDS[f"{user.upper().replace('-', '')}_PASS"]
    return f"tls://{user}:{password}@127.0.0.1:{server.port}"


async def start_fleet(server: Any, fleet_daemons: Any, tls: TlsFiles) -> list[Any]:
    """Both daemons as their own users over TLS, without --nats-allow-plaintext-env; live in the registry."""
    daemons = await asyncio.to_thread(
        fleet_daemons,
        len(DAEMONS),
        "--nats-tls-ca",
        str(tls.ca),
        names=DAEMONS,
        url=lambda name: url_of(server, name),
        allow_plaintext_env=False,
    )
    async with Fleet.connect(url_of(server, "operator"), tls_ca=str(tls.ca)) as fleet:
        await _wait(
            fleet.daemons,
            lambda ds: set(DAEMONS) <= {d["daemon"] for d in ds if d["available"]},
            WAIT,
            "both daemons live in the registry",
            repr,
        )
    return daemons


def violations(log: str) -> list[str]:
    return [line for line in log.splitlines() if "violation" in line.lower()]


async def test_documented_layout_runs_the_fleet(
    nats_server: Any, fleet_daemons: Any, tls_files: TlsFiles
) -> None:
    """list / create (with env, over TLS) / send / events since 0 / kill as `operator`, daemons as their own
    users: everything works and the server logs no permission violation."""
    build7, _ = await start_fleet(nats_server, fleet_daemons, tls_files)
    async with Fleet.connect(url_of(nats_server, "operator"), tls_ca=str(tls_files.ca)) as fleet:
        assert fleet.tls and not fleet.allow_plaintext_env
        ready = await fleet.create("sh", on="build-7", env={"LB_SECRET": "kept"}, **BASH)
        assert (ready["event"], ready["daemon"]) == ("ready", "build-7"), ready
        turn = await fleet.send("build-7/sh", "echo $LB_SECRET-$((6*7))")
        done = await turn.result(WAIT)
        assert (done["event"], done["content"]) == ("complete", "kept-42"), done
        listed = await _wait(
            fleet.list,
            lambda rows: any(r["daemon"] == "build-7" and r["name"] == "sh" for r in rows),
            WAIT,
            "the session in the registry",
            repr,
        )
        assert all(r["available"] for r in listed), listed
        async with await fleet.events("build-7", since=0, follow=False) as history:
            replayed = [ev async for ev in history]
        assert any(ev["event"] == "complete" and ev.get("content") == "kept-42" for ev in replayed), replayed
        assert (await fleet.kill("build-7/sh"))["event"] == "killed"
        await _wait(
            fleet.list,
            lambda rows: all(r["name"] != "sh" for r in rows),
            WAIT,
            "the killed session gone from the registry",
            repr,
        )
    assert "kept" not in build7.log()
    assert not violations(nats_server.log()), violations(nats_server.log())


async def test_a_daemon_cannot_act_for_another_or_read_its_traffic(
    nats_server: Any, fleet_daemons: Any, tls_files: TlsFiles
) -> None:
    """With build-8's credentials (a compromised daemon): publishing build-7's events, registry entry or a
    command to it is refused, and so is subscribing to build-7's command subject or inbox or to the clients'
    `_INBOX.>`, so a command (which may carry `env`) and its reply never reach it. build-7 is unaffected."""
    import nats

    await start_fleet(nats_server, fleet_daemons, tls_files)
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    intruder = await nats.connect(
        url_of(nats_server, "build-8"),
        tls=FleetConfig(url="tls://x", tls_ca=str(tls_files.ca)).ssl_context(),
        inbox_prefix=subjects.inbox_prefix("build-8"),
        error_cb=on_error,
    )
    spied: list[str] = []

    async def spy(msg: Any) -> None:
        spied.append(msg.subject)

    async with Fleet.connect(url_of(nats_server, "operator"), tls_ca=str(tls_files.ca)) as fleet:
        try:
            watched = [
                "_INBOX.>",  # the operator's replies
                f"{subjects.inbox_prefix('build-7')}.>",  # build-7's JetStream acks and registry reads
                subjects.command(subjects.DEFAULT_FLEET, "build-7"),  # commands to build-7
                subjects.events_of(subjects.DEFAULT_FLEET, "build-7"),  # its live events
            ]
            for subject in watched:
                await intruder.subscribe(subject, cb=spy)
            forged = orjson.dumps({"event": "error", "message": "forged", "code": "internal", "seq": 1})
            published = [
                subjects.event(subjects.DEFAULT_FLEET, "build-7", "sh"),
                f"$KV.{subjects.bucket(subjects.DEFAULT_FLEET)}.{subjects.daemon_key('build-7')}",
                subjects.command(subjects.DEFAULT_FLEET, "build-7"),
                f"$JS.API.STREAM.PURGE.{subjects.stream(subjects.DEFAULT_FLEET)}",
            ]
            for subject in published:
                await intruder.publish(subject, forged, reply=intruder.new_inbox())
            await intruder.flush()

            # the operator's traffic with build-7 meanwhile: a command and its reply, a turn through the stream
            ready = await fleet.create("sh", on="build-7", env={"LB_SECRET": "kept"}, **BASH)
            assert ready["event"] == "ready", ready
            done = await (await fleet.send("build-7/sh", "echo $LB_SECRET")).result(WAIT)
            assert done["content"] == "kept", done
            assert [s["name"] for s in await fleet.daemon("build-7").list()] == ["sh"]

            denied = [f'subscription to "{s.lower()}"' for s in watched] + [
                f'publish to "{s.lower()}"' for s in published
            ]
            await _wait(
                lambda: asyncio.sleep(0, errors),
                lambda got: all(any(d in e for e in got) for d in denied),
                WAIT,
                "a permissions violation for every forbidden subject",
                repr,
            )
            assert spied == [], f"build-8's credentials read: {spied}"
            stored = await read_stream(fleet.js)
            assert all(b"forged" not in m.data for m in stored), [m for m in stored if b"forged" in m.data]
            entry = (await registry(fleet.js))["daemon.build-7"]
            assert entry["daemon"] == "build-7" and "forged" not in orjson.dumps(entry).decode(), entry
            assert (await fleet.daemon("build-7").ping())["event"] == "pong"
        finally:
            await intruder.close()
    others = [v for v in violations(nats_server.log()) if 'User "build-8"' not in v]
    assert not others, f"violations by the daemons or the operator doing their work: {others}"


async def test_observer_reads_the_fleet_but_cannot_command(
    nats_server: Any, fleet_daemons: Any, tls_files: TlsFiles
) -> None:
    """The documented read-only observer (the operator without `litbridge.default.cmd.*`) lists the fleet and
    replays its events; a command from it never reaches a daemon."""
    build7, _ = await start_fleet(nats_server, fleet_daemons, tls_files)
    async with Fleet.connect(url_of(nats_server, "operator"), tls_ca=str(tls_files.ca)) as fleet:
        await fleet.create("sh", on="build-7", **BASH)
        done = await (await fleet.send("build-7/sh", "echo seen-by-all")).result(WAIT)
    async with Fleet.connect(
        url_of(nats_server, "observer"), tls_ca=str(tls_files.ca), request_timeout=5
    ) as observer:
        rows = await _wait(
            observer.list, lambda rows: any(r["name"] == "sh" for r in rows), WAIT, "the session listed", repr
        )
        assert [(r["daemon"], r["available"]) for r in rows] == [("build-7", True)], rows
        async with await observer.events("build-7", since=0, follow=False) as history:
            replayed = [ev async for ev in history]
        assert replayed[-1]["seq"] >= done["seq"] and done in [
            {k: v for k, v in ev.items() if k != "daemon"} for ev in replayed
        ]
        with pytest.raises(LitbridgeError) as refused:
            await observer.send("build-7/sh", "echo never")
        assert refused.value.code in ("timeout", "daemon_unavailable"), refused.value
    assert "echo never" not in build7.log()
    assert any(
        'Publish Violation - User "observer", Subject "litbridge.default.cmd.build-7"' in v
        for v in violations(nats_server.log())
    ), violations(nats_server.log())
