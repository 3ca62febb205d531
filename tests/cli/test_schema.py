"""The JSON Schema export: valid draft 2020-12, complete, in agreement with the daemon's `monitor_ready` lists
and the docs/protocol.md tables, and satisfied by the events a real daemon sends."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from _daemon import Daemon

from litbridge.client import Client
from litbridge.protocol import jsonschema as lbschema
from litbridge.protocol.spec import COMMANDS, EVENTS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
BEGIN = lbschema.DOCS_BEGIN
END = lbschema.DOCS_END


def _cli_schema(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", "schema", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def schema() -> dict:
    out = _cli_schema()
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_schema_is_valid_draft_2020_12(schema: dict) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == lbschema.protocol_schema()


def test_schema_covers_every_command_and_event(schema: dict) -> None:
    defs = schema["$defs"]
    assert {k.split(".", 1)[1] for k in defs if k.startswith("command.")} == set(COMMANDS)
    assert {k.split(".", 1)[1] for k in defs if k.startswith("event.")} == set(EVENTS)
    for name, cmd in COMMANDS.items():
        props = defs[f"command.{name}"]["properties"]
        assert props["cmd"] == {"const": name}
        assert set(cmd.fields) <= set(props)
        assert {n for n, f in cmd.fields.items() if f.required} <= set(defs[f"command.{name}"]["required"])
    for name, ev in EVENTS.items():
        assert set(ev.fields) <= set(defs[f"event.{name}"]["properties"])


def test_schema_accepts_and_rejects() -> None:
    v = jsonschema.Draft202012Validator(lbschema.protocol_schema())
    good = [
        {"cmd": "send", "session": "w", "content": "hi", "id": "a1"},
        {
            "cmd": "create",
            "session": "w",
            "cli": "bash",
            "args": ["-l"],
            "env": {"A": "b"},
            "preapprove": True,
        },
        {"cmd": "keystroke", "session": "w", "keys": ["Down", "Enter"], "id": 7},
        {"cmd": "hello", "subscribe": "*", "since_seq": 10},
        {"event": "complete", "session": "w", "content": "x", "turn_id": "t1", "source": "screen", "seq": 3},
        {"event": "some_future_event", "whatever": 1},  # unknown kinds must be accepted (and ignored)
    ]
    bad = [
        {"cmd": "send", "content": "no session"},
        {"cmd": "keystroke", "session": "w", "keys": "Enter"},
        {"cmd": "create", "session": "w", "env": {"A": 1}},
        {"cmd": "nope"},
        {"event": "state", "session": "w", "from": "idle", "to": "sleeping"},
        {"event": "complete", "session": "w", "source": "guess"},
        {"event": "error"},  # message is required
    ]
    for msg in good:
        assert v.is_valid(msg), (msg, [e.message for e in v.iter_errors(msg)])
    for msg in bad:
        assert not v.is_valid(msg), msg


def test_schema_subsets_and_unknown_names() -> None:
    one = json.loads(_cli_schema("--command", "send").stdout)
    assert one == lbschema.command_schema("send")
    ev = json.loads(_cli_schema("--event", "complete").stdout)
    assert ev["properties"]["event"] == {"const": "complete"}
    unknown = _cli_schema("--command", "frob")
    assert unknown.returncode == 1 and "unknown command" in unknown.stderr


def _docs_block() -> str:
    text = DOCS.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "docs/protocol.md lost its generated-table markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def _table_names(block: str, heading: str) -> list[str]:
    section = block.split(f"### {heading}", 1)[1].split("###", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M)


def test_docs_tables_are_generated_from_the_spec() -> None:
    block = _docs_block()
    assert block == lbschema.markdown_tables(), (
        "regenerate: `litbridge schema --update-docs docs/protocol.md`"
    )
    assert _cli_schema("--markdown").stdout == block


def test_update_docs_rewrites_only_the_generated_block(tmp_path: Path) -> None:
    doc = tmp_path / "protocol.md"
    doc.write_text(f"# intro\n{BEGIN}| stale |\n{END}## after\n", encoding="utf-8")
    out = _cli_schema("--update-docs", str(doc))
    assert out.returncode == 0 and "updated" in out.stdout
    assert doc.read_text(encoding="utf-8") == f"# intro\n{BEGIN}{lbschema.markdown_tables()}{END}## after\n"
    assert "already up to date" in _cli_schema("--update-docs", str(doc)).stdout
    (tmp_path / "bare.md").write_text("no markers", encoding="utf-8")
    assert _cli_schema("--update-docs", str(tmp_path / "bare.md")).returncode == 1


def test_schema_monitor_ready_and_docs_agree(daemon: Daemon, schema: dict) -> None:
    async def handshake() -> tuple[dict, dict]:
        async with Client.connect(socket=daemon.socket) as c:
            return c.server_info, await c.hello()

    ready, caps = asyncio.run(handshake())
    schema_commands = [k.split(".", 1)[1] for k in schema["$defs"] if k.startswith("command.")]
    schema_events = [k.split(".", 1)[1] for k in schema["$defs"] if k.startswith("event.")]
    block = _docs_block()
    assert ready["commands"] == schema_commands == _table_names(block, "Commands") == caps["commands"]
    assert ready["events"] == schema_events == _table_names(block, "Events") == caps["events"]


def test_live_daemon_events_satisfy_the_schema(daemon: Daemon) -> None:
    """Every line a real daemon sends during a session's life validates against its event schema."""
    validator = jsonschema.Draft202012Validator(lbschema.protocol_schema())
    seen: list[dict] = []

    async def session_life() -> None:
        async with Client.connect(socket=daemon.socket) as c:
            seen.append(c.server_info)
            stream = c.events()
            seen.append(await c.hello(subscribe="*"))
            await c.create(
                "schema-check", "bash", args=["--norc"], env={"PS1": "$ "}, quiescence=0.3, timeout=60
            )
            turn = await c.send("schema-check", "echo checked")
            await turn.result(timeout=60)
            await c.input("schema-check", "true")
            await c.keystroke("schema-check", ["Enter"])
            seen.append(await c.dump("schema-check"))
            seen.append(await c.ping())
            await c.list()
            for bad in (c.keystroke("schema-check", ["Bogus"]), c.dump("nobody")):
                try:
                    await bad
                except Exception as exc:
                    seen.append(exc.event)  # type: ignore[attr-defined]
            await c.kill("schema-check")
            await c.ping()
            stream.close()
            seen.extend([ev async for ev in stream])

    asyncio.run(session_life())
    kinds = {ev["event"] for ev in seen}
    assert {
        "monitor_ready",
        "capabilities",
        "ready",
        "accepted",
        "state",
        "replace",
        "complete",
        "input_sent",
        "keystroke_sent",
        "dump",
        "pong",
        "sessions",
        "error",
        "killed",
    } <= kinds
    for ev in seen:
        errors = [e.message for e in validator.iter_errors(ev)]
        assert not errors, (ev, errors)
        assert validator.evolve(schema=lbschema.event_schema(ev["event"])).is_valid(ev), ev


# What each driver really does with `create.model`, and the two texts that describe it.
MODEL_FLAGS = {
    "claude": ["--model", "m-x"],
    "gemini": ["--model", "m-x"],
    "rift": ["--model", "m-x"],
    "codex": ["-m", "m-x"],
}


@pytest.mark.parametrize("cli", [*MODEL_FLAGS, "cat"])
def test_create_model_is_described_as_each_driver_passes_it(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from litbridge.cli import _subparser, build_parser
    from litbridge.session import Session

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # launch() makes per-session homes (gemini)
    loop = asyncio.new_event_loop()
    try:
        options = {"session": "m", "cli": cli, "model": "m-x", "working_dir": str(tmp_path), "args": []}
        session = Session("m", {**options, "env": {"HOME": str(tmp_path)}}, lambda ev: None, loop=loop)
        argv = session.driver.launch().argv
    finally:
        loop.close()
    spec_doc = COMMANDS["create"].fields["model"].doc
    create = _subparser(build_parser(), "create")
    help_text = " ".join(create.format_help().split())
    if cli in MODEL_FLAGS:
        flag = MODEL_FLAGS[cli][0]
        at = argv.index(flag)
        assert argv[at : at + 2] == MODEL_FLAGS[cli], argv
        assert re.search(rf"`{flag} <model>` for [a-z, ]*\b{cli}\b", spec_doc), spec_doc
        assert re.search(rf"[a-z, ]*\b{cli}\b[a-z, ]* gets? {flag} M", help_text), help_text
    else:  # the generic driver: a label only
        assert "m-x" not in argv, argv
        assert "generic driver passes nothing" in spec_doc, spec_doc
        assert "any other program gets nothing" in help_text, help_text
