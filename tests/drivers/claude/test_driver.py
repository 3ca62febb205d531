"""ClaudeDriver behaviour against a scripted CLI: launch/pinning, startup dialogs, submit, answer, interrupt, resume.

The driver runs inside a real `Session` (its terminal, turn and question bookkeeping) over a fake child that shows
real capture screens and changes them when the driver types the keys the real CLI reacted to; everything runs on
a virtual clock, so timing rules (settle, quiet, gaps) are exercised without sleeping.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_captures import ScreenChild, boot, make_session, screen, send

from litbridge.drivers import osc7501
from litbridge.drivers.base import DriverError
from litbridge.drivers.claude.driver import ClaudeDriver
from litbridge.drivers.claude.transcript import project_dir
from litbridge.vclock import VirtualTimeLoop

PASTE = b"\x1b[200~"
UP, DOWN, ENTER, ESC, CTRL_C = b"\x1b[A", b"\x1b[B", b"\r", b"\x1b", b"\x03"


S02_SCREENS = {  # one plain prompt turn of capture s02: what the fake CLI shows at each step
    "idle": "01_idle_before.txt",
    "typed": "02_typed_prompt.txt",
    "busy": "04_t+1s_spinner_before_first_token.txt",
    "done": "08_idle_after_turn.txt",
}


def s02_screens(*keys: str) -> dict[str, list[str]]:
    return {k: screen("s02_", S02_SCREENS[k]) for k in keys}


FakeCLI = ScreenChild
make = make_session


def run(loop: asyncio.AbstractEventLoop, coro: Any, timeout: float = 120.0) -> Any:
    return loop.run_until_complete(asyncio.wait_for(coro, timeout))


@pytest.fixture
def loop():
    lp = VirtualTimeLoop()
    yield lp
    lp.close()


# ---------------------------------------------------------------------------------------------- launch


def test_launch_pins_a_session_id_and_passes_model(tmp_path: Path, loop) -> None:
    cli = FakeCLI(loop, s02_screens("idle"), "idle", {})
    drv, _, _ = make(tmp_path, cli, model="claude-opus-5-5", args=["--permission-mode", "manual"])
    spec = drv.launch()
    assert spec.argv[:3] == ["claude", "--permission-mode", "manual"]
    i = spec.argv.index("--session-id")
    sid = spec.argv[i + 1]
    assert len(sid) == 36 and drv.session_id == sid
    assert spec.argv[-2:] == ["--model", "claude-opus-5-5"]
    assert spec.cwd == str(tmp_path / "work")
    assert spec.env_remove == ["CLAUDECODE", "CLAUDE_CODE_*"]  # a nested Claude Code writes no transcript
    assert (
        drv.follower is not None
        and drv.follower.tailer.path == project_dir(str(tmp_path / "work"), drv.env) / f"{sid}.jsonl"
    )


def test_launch_respects_callers_resume_flags(tmp_path: Path, loop) -> None:
    cli = FakeCLI(loop, s02_screens("idle"), "idle", {})
    drv, _, _ = make(tmp_path, cli, args=["--resume", "0b6f3c1e-8d2a-4c59-9f0e-1a2b3c4d5e6f"])
    spec = drv.launch()
    assert (
        "--session-id" not in spec.argv
        and drv.session_id == "0b6f3c1e-8d2a-4c59-9f0e-1a2b3c4d5e6f"
        and drv.resumed
    )
    drv2, _, _ = make(tmp_path, cli, resume="5d41402a-bc4b-4a76-b9e7-19e5a2b0c3d4")
    pdir = project_dir(str(tmp_path / "work"), drv2.env)
    pdir.mkdir(parents=True)
    (pdir / "5d41402a-bc4b-4a76-b9e7-19e5a2b0c3d4.jsonl").write_bytes(
        b'{"type":"user","message":{"content":"hi"}}\n'
    )
    spec2 = drv2.launch()
    assert (
        spec2.argv[-2:] == ["--resume", "5d41402a-bc4b-4a76-b9e7-19e5a2b0c3d4"]
        and "--session-id" not in spec2.argv
        and drv2.resumed
    )


def test_preapprove_writes_claudes_own_keys(tmp_path: Path, loop) -> None:
    cli = FakeCLI(loop, s02_screens("idle"), "idle", {})
    cfg = tmp_path / ".claude"
    cfg.mkdir()
    (cfg / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": {"/other": {"x": 1}}}))
    key = "sk-ant-api03-mockkey-abcdefghijklmnopqrstuvwxyz"
    drv, _, _ = make(
        tmp_path,
        cli,
        preapprove=True,
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_API_KEY": key},
    )
    drv.launch()
    data = json.loads((cfg / ".claude.json").read_text())
    assert data["numStartups"] == 3 and data["projects"]["/other"] == {"x": 1}  # merged, not clobbered
    assert data["hasCompletedOnboarding"] is True and data["hasSeenAutoDefaultNotice"] is True
    assert data["projects"][str(tmp_path / "work")]["hasTrustDialogAccepted"] is True
    assert data["customApiKeyResponses"]["approved"] == [key[-20:]]
    assert json.loads((cfg / "settings.json").read_text())["skipDangerousModePermissionPrompt"] is True


# ---------------------------------------------------------------------------------------------- startup


def _startup_cli(loop) -> FakeCLI:
    screens = {
        "trust": screen("s01a", "01_trust_dialog_initial.txt"),
        "trust_yes": screen("s01a", "02_trust_dialog_cursor_on_yes.txt"),
        "key": screen("s01a", "03_apikey_dialog_initial.txt"),
        "key_yes": screen("s01a", "04_apikey_dialog_cursor_on_yes.txt"),
        "bypass": screen("s01d", "05_bypass_dialog_initial.txt"),
        "bypass_yes": screen("s01d", "06_bypass_dialog_on_accept.txt"),
        "idle": screen("s01d", "07_idle_bypass_mode.txt"),
    }
    transitions = {
        ("trust", DOWN): "trust_yes",
        ("trust_yes", ENTER): "key",
        ("key", UP): "key_yes",
        ("key_yes", ENTER): "bypass",
        ("bypass", DOWN): "bypass_yes",
        ("bypass_yes", ENTER): "idle",
    }
    return FakeCLI(loop, screens, "trust", transitions)


def test_startup_answers_trust_api_key_and_bypass_one_key_per_settled_frame(tmp_path: Path, loop) -> None:
    cli = _startup_cli(loop)
    drv, host, events = make(tmp_path, cli)
    times: list[float] = []
    cli.on_write = lambda data: times.append(loop.time())
    ready = boot(loop, host, events)
    assert ready["event"] == "ready" and ready["model"] == "Opus 5.5" and ready["resumed"] is False
    assert [k for _, k in cli.keys_seen] == [DOWN, ENTER, UP, ENTER, DOWN, ENTER]
    # never an Enter while the cursor sat on the refusing default, never a key into the live prompt
    assert all(not (k == ENTER and s in ("trust", "key", "bypass")) for s, k in cli.keys_seen)
    assert all(s != "idle" for s, _ in cli.keys_seen)
    # the first key waits for the dialog to be quiet for 0.5 s after it painted
    assert times[0] >= 0.5
    dismissed = [(e["dialog"], e["keys"]) for e in events if e["event"] == "dialog_dismissed"]
    assert dismissed == [
        ("trust", ["Down", "Enter"]),
        ("api_key", ["Up", "Enter"]),
        ("bypass", ["Down", "Enter"]),
    ]
    assert drv.can_accept_input()


def test_startup_relays_an_unknown_dialog_as_a_question(tmp_path: Path, loop) -> None:
    rows = [""] * 50
    rows[40] = "─" * 200
    rows[41] = " This conversation is large and may be expensive to resume."
    rows[43] = " ❯ 1. Compact and resume"
    rows[44] = "   2. Resume without compacting"
    rows[45] = "   3. Start a new session"
    rows[47] = " Enter to confirm · Esc to cancel"
    cli = FakeCLI(loop, {"q": rows}, "q", {})
    drv, host, events = make(tmp_path, cli)
    boot(loop, host, events)
    assert cli.keys_seen == []  # never typed into an unknown modal
    q = next(e for e in events if e["event"] == "question")
    assert q["kind"] == "choice" and q["text"] == "This conversation is large and may be expensive to resume."
    assert [o["label"] for o in q["options"]] == [
        "Compact and resume",
        "Resume without compacting",
        "Start a new session",
    ]
    assert not drv.can_accept_input() and host.state == "dialog"


def test_startup_fails_cleanly_when_the_cli_exits(tmp_path: Path, loop) -> None:
    cli = FakeCLI(loop, {"blank": [""] * 50}, "blank", {})
    _drv, host, events = make(tmp_path, cli)
    loop.call_later(1.0, cli.exit, 1)
    err = boot(loop, host, events)
    assert err["event"] == "error" and err["code"] == "spawn_failed"
    assert host.dead and [e["to"] for e in events if e["event"] == "state"][-1] == "dead"


# ---------------------------------------------------------------------------------------------- turns


def _ready_driver(tmp_path: Path, loop, screens: dict[str, list[str]], transitions, start="idle", **opts):
    cli = FakeCLI(loop, screens, start, transitions)
    drv, host, events = make(tmp_path, cli, **opts)
    assert boot(loop, host, events)["event"] == "ready"
    return cli, drv, host, events


def _append(drv: ClaudeDriver, *entries: dict) -> None:
    tailer = drv.follower.tailer
    assert tailer.path is not None
    tailer.path.parent.mkdir(parents=True, exist_ok=True)
    with open(tailer.path, "ab") as fh:
        for e in entries:
            fh.write(orjson.dumps(e) + b"\n")


PARIS_END = (  # the transcript lines that end a turn answered "Paris."
    {
        "type": "assistant",
        "message": {"id": "m2", "stop_reason": "end_turn", "content": [{"type": "text", "text": "Paris."}]},
    },
    {"type": "system", "subtype": "turn_duration"},
)


def _answer_paris(
    loop: asyncio.AbstractEventLoop, cli: FakeCLI, drv: Any, text: str, prompt_at: float = 0.2
) -> None:
    """Claude Code taking the Enter of `text`: busy at once, its prompt line in the transcript at `prompt_at`,
    then the answer "Paris." on the screen and in the transcript."""
    loop.call_later(0.05, cli.show, "busy")
    loop.call_later(prompt_at, _append, drv, {"type": "user", "message": {"content": text}})
    loop.call_later(1.0, cli.show, "done")
    loop.call_later(1.1, _append, drv, *PARIS_END)


def _ends(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The turns' terminal events, (event, content)."""
    return [
        (e["event"], e.get("content"))
        for e in events
        if e["event"] in ("complete", "interrupted", "turn_error")
    ]


def test_submit_pastes_then_enters_separately_and_completes_from_the_transcript(tmp_path: Path, loop) -> None:
    screens = s02_screens("idle", "typed", "busy", "done")
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, {})
    text = "What is the capital of France?"
    writes: list[tuple[float, bytes]] = []

    def on_write(data: bytes) -> None:
        writes.append((loop.time(), data))
        if data.startswith(PASTE):
            loop.call_later(0.03, cli.show, "typed")
        elif data == ENTER:
            loop.call_later(0.05, cli.show, "busy")
            loop.call_later(0.2, _append, drv, {"type": "user", "message": {"content": text}})
            answer = "Paris is the capital of France."
            loop.call_later(2.0, cli.show, "done")
            loop.call_later(
                2.1,
                _append,
                drv,
                {
                    "type": "assistant",
                    "message": {
                        "id": "m1",
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 5, "output_tokens": 7},
                        "content": [{"type": "text", "text": answer}],
                    },
                },
                {"type": "system", "subtype": "turn_duration"},
            )

    cli.on_write = on_write
    send(loop, host, text)
    assert writes[0][1] == PASTE + text.encode() + b"\x1b[201~"
    assert writes[1][1] == ENTER and writes[1][0] - writes[0][0] >= 0.1  # a separate write after a gap
    assert len(writes) == 2  # no probe characters, no extra Enter
    assert not drv.can_accept_input()  # busy with the turn
    run(loop, asyncio.sleep(3.0))
    done = [e for e in events if e["event"] == "complete"]
    assert (
        len(done) == 1
        and done[0]["content"] == "Paris is the capital of France."
        and done[0]["source"] == "transcript"
    )
    assert done[0]["usage"]["output_tokens"] == 7
    assert host.state == "idle" and drv.can_accept_input()


def test_submit_retries_enter_when_the_text_stays_in_the_box(tmp_path: Path, loop) -> None:
    screens = s02_screens("idle", "typed", "busy")
    cli, _drv, host, events = _ready_driver(tmp_path, loop, screens, {})
    enters: list[float] = []

    def on_write(data: bytes) -> None:
        if data.startswith(PASTE):
            loop.call_later(0.03, cli.show, "typed")
        elif data == ENTER:
            enters.append(loop.time())
            if len(enters) == 2:  # the first Enter was swallowed
                loop.call_later(0.05, cli.show, "busy")

    cli.on_write = on_write
    send(loop, host, "What is the capital of France?")
    assert len(enters) == 2 and enters[1] - enters[0] >= 0.9
    assert not any(e["event"] == "turn_error" for e in events)


def test_submit_gives_up_with_a_timeout_error(tmp_path: Path, loop) -> None:
    screens = s02_screens("idle", "typed")
    cli, _drv, host, events = _ready_driver(tmp_path, loop, screens, {})
    cli.on_write = lambda data: data.startswith(PASTE) and loop.call_later(0.03, cli.show, "typed")
    send(loop, host, "What is the capital of France?")
    err = [e for e in events if e["event"] == "turn_error"]
    assert len(err) == 1 and err[0]["kind"] == "timeout"
    enters = [k for _, k in cli.keys_seen if k == ENTER]
    assert 2 <= len(enters) <= 5  # bounded retries


def test_permission_question_answered_by_label_moves_then_confirms(tmp_path: Path, loop) -> None:
    screens = {
        "idle": screen("s04a", "01_idle.txt"),
        "dialog": screen("s04a", "02_t1_bash_permission_dialog.txt"),
        "dialog_down": screen("s04a", "03_t1_bash_dialog_cursor_down.txt"),
        "after": screen("s04a", "04_t1_idle.txt"),
    }
    transitions = {("dialog", DOWN): "dialog_down", ("dialog_down", ENTER): "after"}
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, transitions)
    cli.show("dialog")
    run(loop, asyncio.sleep(0.3))
    q = next(e for e in events if e["event"] == "question")
    assert q["kind"] == "permission" and q["text"] == "Do you want to proceed?"
    assert host.state == "dialog" and not drv.can_accept_input()
    with pytest.raises(DriverError) as ei:
        run(loop, drv.answer(q["question_id"], digit="9"))
    assert ei.value.code == "bad_field"
    with pytest.raises(DriverError) as ei:
        run(loop, drv.answer("q-nope", digit="1"))
    assert ei.value.code == "no_question"
    run(loop, drv.answer(q["question_id"], option="Yes, and always allow access"))
    run(loop, asyncio.sleep(0.5))
    assert [k for _, k in cli.keys_seen] == [DOWN, ENTER]
    closed = [e for e in events if e["event"] == "question_closed"]
    assert closed == [{**closed[0], "question_id": q["question_id"], "reason": "answered"}]
    with pytest.raises(DriverError):
        run(loop, drv.answer(None, digit="1"))


def test_answer_by_digit_on_the_default_option_is_one_enter(tmp_path: Path, loop) -> None:
    screens = {
        "idle": screen("s04a", "01_idle.txt"),
        "dialog": screen("s04a", "02_t1_bash_permission_dialog.txt"),
        "after": screen("s04a", "04_t1_idle.txt"),
    }
    cli, drv, _host, events = _ready_driver(tmp_path, loop, screens, {("dialog", ENTER): "after"})
    cli.show("dialog")
    run(loop, asyncio.sleep(0.3))
    q = next(e for e in events if e["event"] == "question")
    run(loop, drv.answer(q["question_id"], digit="1"))
    run(loop, asyncio.sleep(0.5))
    assert [k for _, k in cli.keys_seen] == [ENTER]


def test_interrupt_sends_esc_and_ends_the_turn_even_without_a_transcript_marker(tmp_path: Path, loop) -> None:
    screens = {
        "idle": screen("s06", "19_f_after_esc_close.txt"),
        "busy": screen("s06", "04_b_spinner_before_esc.txt"),
        "back": screen("s06", "05_b_after_esc_0.3s.txt"),
    }
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, {("busy", ESC): "back"})
    text = "slow first token (Esc before any text)"

    def on_write(data: bytes) -> None:
        if data == ENTER:
            loop.call_later(0.05, cli.show, "busy")
            loop.call_later(0.2, _append, drv, {"type": "user", "message": {"content": text}})

    cli.on_write = on_write
    send(loop, host, text)
    run(loop, asyncio.sleep(1.0))
    host.interrupt()
    assert cli.keys_seen[-1][1] == ESC
    run(loop, asyncio.sleep(4.0))
    assert [end for end, _ in _ends(events)] == ["interrupted"]


def test_stop_returns_the_session_id_for_resume(tmp_path: Path, loop) -> None:
    cli = FakeCLI(loop, s02_screens("idle"), "idle", {})
    drv, _, _ = make(tmp_path, cli)
    drv.launch()
    assert run(loop, drv.stop(True)) is None  # no conversation yet: nothing to resume
    _append(drv, {"type": "user", "message": {"content": "hi"}})
    assert run(loop, drv.stop(True)) == drv.session_id
    assert run(loop, drv.stop(False)) is None
    cli2 = FakeCLI(loop, s02_screens("idle"), "idle", {})
    again, host2, events2 = make(tmp_path, cli2, resume=drv.session_id)
    assert again.launch().argv[-2:] == ["--resume", drv.session_id]
    ready = boot(loop, host2, events2)
    assert ready["event"] == "ready" and ready["resumed"] is True
    assert again.follower is not None and again.follower.tailer.poll() == []  # history is not replayed


def test_abandoned_older_prompt_never_ends_the_new_turn(tmp_path: Path, loop) -> None:
    """Esc before the first token leaves a prompt with nothing after it; when the next prompt lands, the tracker
    closes the old one (`abandoned`) — that must not end the new turn."""
    screens = s02_screens("idle", "typed", "busy", "done")
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, {})
    _append(drv, {"type": "user", "message": {"content": "old prompt, interrupted before any token"}})
    run(loop, asyncio.sleep(0.5))
    host.interrupt()  # the organic turn of the old prompt: Esc before its first token
    run(loop, asyncio.sleep(1.5))
    text = "What is the capital of France?"

    def on_write(data: bytes) -> None:
        if data == ENTER:
            _answer_paris(loop, cli, drv, text)

    cli.on_write = on_write
    send(loop, host, text)
    run(loop, asyncio.sleep(2.0))
    assert _ends(events) == [("interrupted", ""), ("complete", "Paris.")]


@pytest.mark.parametrize("read", ["while_idle", "after_the_next_send"])
def test_a_prompt_line_read_after_its_turn_ended_touches_no_turn(tmp_path: Path, loop, read: str) -> None:
    """Esc before the first token ends a turn off the screen; on a loaded machine its prompt line may be read from
    the transcript only after that. Read while idle it opens no organic turn; read after the next send it does not
    verify that send, so the old prompt's `abandoned` close (it comes with the new prompt) cannot end it."""
    screens = {
        "idle": screen("s06", "19_f_after_esc_close.txt"),
        "busy": screen("s06", "04_b_spinner_before_esc.txt"),
        "back": screen("s06", "05_b_after_esc_0.3s.txt"),
        "restored": screen("s06", "06_b_idle_after_esc.txt"),
        "cleared": screen("s06", "07_b_after_clearing_restored_draft.txt"),
        "done": s02_screens("done")["done"],
    }
    transitions = {("busy", ESC): "back", ("restored", CTRL_C): "cleared"}
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, transitions)
    old, text = "slow first token (Esc before any text)", "What is the capital of France?"
    old_line = {"type": "user", "message": {"content": old}}
    pasted: list[bytes] = []

    def on_write(data: bytes) -> None:
        if data == ESC:
            loop.call_later(0.3, cli.show, "restored")  # the prompt is put back into the input box
        if data.startswith(PASTE):
            pasted.append(data)
        if data != ENTER or cli.current == "busy":
            return
        if text.encode() not in pasted[-1]:
            loop.call_later(0.05, cli.show, "busy")
            return
        if read == "after_the_next_send":
            loop.call_later(0.1, _append, drv, old_line)
        _answer_paris(loop, cli, drv, text, prompt_at=0.3)

    cli.on_write = on_write
    send(loop, host, old)
    run(loop, asyncio.sleep(1.0))
    host.interrupt()
    run(loop, asyncio.sleep(4.0))
    # the turn ended (off the screen) and its put-back prompt was cleared
    assert cli.current == "cleared", cli.keys_seen
    if read == "while_idle":
        _append(drv, old_line)
        run(loop, asyncio.sleep(2.0))
    assert not [e for e in events if e["event"] == "accepted" and e.get("organic")]
    send(loop, host, text)
    run(loop, asyncio.sleep(3.0))
    assert _ends(events) == [("interrupted", ""), ("complete", "Paris.")]


def test_a_typed_prompt_and_its_reasoning_from_the_transcript(tmp_path: Path, loop) -> None:
    """A prompt typed into Claude itself (attach) opens an organic turn whose `accepted` carries the transcript's
    prompt text; the turn's `thinking` blocks are `reasoning` events of that turn (not the spinner's `thinking`)."""
    screens = s02_screens("idle", "busy", "done")
    cli, drv, _host, events = _ready_driver(tmp_path, loop, screens, {})
    _append(drv, {"type": "user", "message": {"content": "Why is the sky blue?"}})
    cli.show("busy")
    run(loop, asyncio.sleep(0.5))
    _append(
        drv,
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "thinking", "thinking": "Rayleigh scattering, briefly.", "signature": "x"},
                    {"type": "text", "text": "Rayleigh scattering."},
                ],
                "stop_reason": "end_turn",
            },
        },
        {"type": "system", "subtype": "turn_duration"},
    )
    cli.show("done")
    run(loop, asyncio.sleep(2.0))
    (acc,) = [e for e in events if e["event"] == "accepted"]
    assert acc["organic"] is True and acc["content"] == "Why is the sky blue?"
    (why,) = [e for e in events if e["event"] == "reasoning"]
    assert why["text"] == "Rayleigh scattering, briefly." and why["turn_id"] == acc["turn_id"]
    (done,) = [e for e in events if e["event"] == "complete"]
    assert done["turn_id"] == acc["turn_id"] and done["content"] == "Rayleigh scattering."
    assert all(e.get("text") != why["text"] for e in events if e["event"] == "thinking")


def test_screen_fallback_closes_a_turn_only_after_a_silent_transcript(tmp_path: Path, loop) -> None:
    """No transcript at all (e.g. an unexpected config dir): the screen closes the turn, slower never shorter."""
    screens = s02_screens("idle", "typed", "busy", "done")
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, {})

    def on_write(data: bytes) -> None:
        if data == ENTER:
            loop.call_later(0.05, cli.show, "busy")
            loop.call_later(3.0, cli.show, "done")

    cli.on_write = on_write
    send(loop, host, "What is the capital of France?")
    run(loop, asyncio.sleep(3.0 + 6.0))
    assert not [
        e for e in events if e["event"] == "complete"
    ]  # idle for 6 s: still waiting for the transcript
    run(loop, asyncio.sleep(4.0))
    done = [e for e in events if e["event"] == "complete"]
    assert len(done) == 1 and done[0]["source"] == "screen" and "usage" not in done[0]
    assert done[0]["content"] == (
        "Paris is the capital of France. It sits on the Seine river in the north of the country, and it has been "
        "the seat of French government for most of the last thousand years.\n\nIt is also the largest city in France."
    )
    assert drv.can_accept_input()


def test_screen_rules_are_selected_by_cli_version() -> None:
    from litbridge.drivers.claude import v2_1
    from litbridge.drivers.claude import versions as d

    assert d.rules_for("2.1.328") is v2_1.Rules
    assert d.rules_for(None) is v2_1.Rules  # `claude --version` unreadable: the newest validated rules
    assert d.rules_for("2.10.0") is v2_1.Rules  # "2.1" must not prefix-match 2.10; falls back to the newest
    assert d.rules_for("9.0.0") is v2_1.Rules


def test_paste_payload_cannot_escape_the_bracketed_paste() -> None:
    from litbridge.drivers.paste import paste_payload

    assert paste_payload("a\r\nb\rc\nd\te") == b"a\nb\nc\nd\te"
    assert paste_payload("x\x1b[201~\x1b[Ay\x03") == b"x[201~[Ay"
    assert paste_payload("héllo ✓") == "héllo ✓".encode()


def test_osc_status_is_primary_but_a_stale_working_report_expires(tmp_path: Path, loop) -> None:
    screens = {
        "idle": screen("s10", "03_idle.txt"),
        "busy": screen("s02_", "04_t+1s_spinner_before_first_token.txt"),
    }
    _cli, drv, host, _events = _ready_driver(tmp_path, loop, screens, {})
    assert drv.can_accept_input()
    drv.on_status({"state": "working", "app": "claude-code"})
    assert not drv.can_accept_input() and host.state == "thinking"  # OSC leads the screen
    drv.on_status({"state": "done", "app": "claude-code"})
    assert drv.can_accept_input() and host.state == "idle"
    drv.on_status(osc7501.parse("state=blocked:app=claude-code:kind=permission:msg=YXBwcm92ZSBXcml0ZQ=="))
    assert drv.engine.status is not None and drv.engine.status["msg"] == "approve Write"  # base64 decoded
    drv.on_status({"state": "working", "app": "claude-code"})
    assert not drv.can_accept_input()
    ready_calls: list[float] = []
    host.input_ready = lambda: ready_calls.append(loop.time())  # type: ignore[method-assign]
    run(loop, asyncio.sleep(3.5))  # the screen stayed idle without a spinner: the lost `done` expires
    assert drv.can_accept_input() and host.state == "idle"
    assert len(ready_calls) == 1  # and the session is told, although the screen never changed


def test_startup_reports_an_unparseable_modal_and_never_types_into_it(tmp_path: Path, loop) -> None:
    rows = [""] * 50
    rows[40] = "─" * 200
    rows[41] = " Something new that has no options at all"
    rows[43] = " Press Enter to continue · Esc to cancel"
    cli = FakeCLI(loop, {"m": rows}, "m", {})
    drv, host, events = make(tmp_path, cli)
    boot(loop, host, events)
    assert cli.keys_seen == []
    unknown = [e for e in events if e["event"] == "unknown_dialog"]
    assert len(unknown) == 1 and "Something new" in unknown[0]["dialog"]
    assert not drv.can_accept_input()
    cli.show("m")  # a repaint of the same modal is not reported again
    run(loop, asyncio.sleep(0.5))
    assert len([e for e in events if e["event"] == "unknown_dialog"]) == 1


def test_resume_of_a_missing_conversation_starts_fresh_and_continue_pins_the_newest(
    tmp_path: Path, loop
) -> None:
    import os

    cli = FakeCLI(loop, s02_screens("idle"), "idle", {})
    drv, _, _ = make(tmp_path, cli, resume="gone")
    spec = drv.launch()
    assert "--resume" not in spec.argv and "--session-id" in spec.argv and not drv.resumed
    pdir = project_dir(str(tmp_path / "work"), drv.env)
    pdir.mkdir(parents=True, exist_ok=True)
    (pdir / "11111111-2222-4333-8444-555555555555.jsonl").write_bytes(b"{}\n")
    (pdir / "99999999-8888-4777-8666-555555555555.jsonl").write_bytes(b"{}\n")
    os.utime(pdir / "11111111-2222-4333-8444-555555555555.jsonl", (1, 1))
    drv2, _, _ = make(tmp_path, cli, args=["--continue"])
    spec2 = drv2.launch()
    assert (
        "--session-id" not in spec2.argv
        and drv2.session_id == "99999999-8888-4777-8666-555555555555"
        and drv2.resumed
    )


def _send_counting_pastes(tmp_path: Path, loop, on_paste) -> tuple[Any, list[float], list[dict]]:
    """Send one prompt to a ready driver; `on_paste(cli, n)` plays the CLI's answer to the n-th paste."""
    cli, _drv, host, events = _ready_driver(tmp_path, loop, s02_screens("idle", "typed", "busy"), {})
    pastes: list[float] = []

    def on_write(data: bytes) -> None:
        if data.startswith(PASTE):
            pastes.append(loop.time())
            on_paste(cli, len(pastes))
        elif data == ENTER and cli.current == "typed":
            loop.call_later(0.05, cli.show, "busy")

    cli.on_write = on_write
    send(loop, host, "What is the capital of France?")
    return cli, pastes, events


def test_a_swallowed_paste_is_pasted_again_once(tmp_path: Path, loop) -> None:
    def on_paste(cli: Any, n: int) -> None:
        # the first is lost: the input re-renders (its terminal probe completed), empty
        loop.call_later(0.05 if n == 1 else 0.03, cli.show, "idle" if n == 1 else "typed")

    cli, pastes, events = _send_counting_pastes(tmp_path, loop, on_paste)
    assert len(pastes) == 2 and pastes[1] - pastes[0] >= 2.5
    assert cli.current == "busy" and not any(e["event"] == "turn_error" for e in events)


def test_a_starved_cli_that_has_not_read_the_paste_yet_is_not_pasted_again(tmp_path: Path, loop) -> None:
    """A CPU-starved CLI draws nothing for seconds after the paste and Enter, then takes both: typing again
    meanwhile would have put the prompt in twice ("...France?What is the capital of France?")."""

    def on_paste(cli: Any, n: int) -> None:
        if n == 1:
            loop.call_later(4.0, cli.show, "busy")  # silent, then paste + Enter at once

    cli, pastes, events = _send_counting_pastes(tmp_path, loop, on_paste)
    run(loop, asyncio.sleep(5.0))
    assert len(pastes) == 1
    assert cli.current == "busy" and not any(e["event"] == "turn_error" for e in events)


def test_a_short_busy_blip_counts_as_submitted(tmp_path: Path, loop) -> None:
    """A very fast answer: busy for less than the debounce, no transcript; the driver must not paste again."""
    screens = s02_screens("idle", "typed", "busy", "done")
    cli, _drv, host, _events = _ready_driver(tmp_path, loop, screens, {})

    def on_write(data: bytes) -> None:
        if data.startswith(PASTE):
            loop.call_later(0.03, cli.show, "typed")
        elif data == ENTER:
            loop.call_later(0.02, cli.show, "busy")
            loop.call_later(0.06, cli.show, "done")

    cli.on_write = on_write
    send(loop, host, "What is the capital of France?")
    run(loop, asyncio.sleep(5.0))
    assert [k for _, k in cli.keys_seen].count(ENTER) == 1
    assert sum(1 for _, k in cli.keys_seen if k.startswith(PASTE)) == 1


def test_stitch_extends_the_answer_by_a_later_window() -> None:
    from litbridge.drivers.claude.driver import stitch

    old = "First paragraph here.\n\nSecond paragraph here.\n\nThird paragraph, only its first ro"
    window = "cut top of the second one\n\nThird paragraph, only its first row and the rest.\n\nFourth one."
    assert stitch(old, window) == (
        "First paragraph here.\n\nSecond paragraph here.\n\n"
        "Third paragraph, only its first row and the rest.\n\nFourth one."
    )
    assert stitch(old, old + " more") == old + " more"  # plain growth
    garbled = "First paragraph here.\n\nSecond paragraph here.\n\nThird parXXXgarbage"
    assert stitch(garbled, window).endswith(
        "Third paragraph, only its first row and the rest.\n\nFourth one."
    )
    assert stitch("Unrelated text entirely.", window) == window  # no overlap: the window alone


def test_rewind_list_answered_by_digit_and_text_answers_are_refused(tmp_path: Path, loop) -> None:
    rewind = screen("s06", "18_f_after_double_esc.txt")
    up = list(rewind)
    y = next(i for i, r in enumerate(up) if r.strip() == "second message typed while busy")
    up[y] = "  ❯ second message typed while busy"
    up = [("    (current)" if r.strip() == "❯ (current)" else r) for r in up]
    screens = {"idle": screen("s06", "19_f_after_esc_close.txt"), "rewind": rewind, "up": up}
    transitions = {("rewind", UP): "up", ("up", ENTER): "idle"}
    cli, drv, host, events = _ready_driver(tmp_path, loop, screens, transitions)
    cli.show("rewind")
    run(loop, asyncio.sleep(0.5))
    q = next(e for e in events if e["event"] == "question")
    assert q["kind"] == "choice" and len(q["options"]) == 6 and q["options"][5]["selected"]
    assert host.state == "dialog" and not [e for e in events if e["event"] == "unknown_dialog"]
    with pytest.raises(DriverError) as ei:
        run(loop, drv.answer(q["question_id"], text="go back two prompts please"))
    assert ei.value.code == "bad_field" and "text answers are not supported" in ei.value.message
    assert cli.keys_seen == []  # nothing typed for a refused answer
    run(loop, drv.answer(q["question_id"], digit="5"))
    run(loop, asyncio.sleep(0.5))
    assert [k for _, k in cli.keys_seen] == [UP, ENTER]
    assert any(e["event"] == "question_closed" and e["question_id"] == q["question_id"] for e in events)


def test_each_frame_is_classified_once(tmp_path: Path, loop) -> None:
    screens = s02_screens("idle", "busy", "done")
    cli, drv, _host, _events = _ready_driver(tmp_path, loop, screens, {})
    rules = drv.rules
    calls: list[int] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(rules, name)

        def classify(self, rows: Any) -> Any:
            calls.append(1)
            return rules.classify(rows)

    drv.rules = Counting()
    drv.engine.begin_organic("typed into the CLI")
    frames = 0
    for name in ("busy", "busy", "done", "idle", "busy", "done"):
        cli.show(name)  # on_screen -> settle, stream, state: all on the same frame
        frames += 1
        run(loop, asyncio.sleep(0.4))
    assert 0 < len(calls) <= frames


# ---------------------------------------------------------------------------------------------- contract


def _dialog_session(tmp_path: Path, loop):
    screens = {
        "idle": screen("s04a", "01_idle.txt"),
        "dialog": screen("s04a", "02_t1_bash_permission_dialog.txt"),
        "dialog_down": screen("s04a", "03_t1_bash_dialog_cursor_down.txt"),
        "after": screen("s04a", "04_t1_idle.txt"),
    }
    transitions = {
        ("dialog", DOWN): "dialog_down",
        ("dialog_down", ENTER): "after",
        ("dialog", ENTER): "after",
    }
    cli, _drv, host, events = _ready_driver(tmp_path, loop, screens, transitions)
    cli.show("dialog")
    run(loop, asyncio.sleep(0.6))
    q = next(e for e in events if e["event"] == "question")
    return cli, host, events, q


def test_a_question_option_echoed_back_is_a_valid_answer(tmp_path: Path, loop) -> None:
    """`options[].digit` is a string, and `answer` takes it back as it came (or as a JSON integer)."""
    cli, host, events, q = _dialog_session(tmp_path, loop)
    option = q["options"][0]
    assert option["digit"] == "1"
    run(loop, host.answer(None, 1, None, None, re="a1"))  # an integer digit, as some clients send it
    run(loop, asyncio.sleep(0.5))
    assert [k for _, k in cli.keys_seen][-1:] == [ENTER]
    sent = next(e for e in events if e["event"] == "answer_sent")
    assert sent["digit"] == "1" and sent["question_id"] == q["question_id"]


def test_answer_sent_echoes_the_digit_and_question_of_an_answer_by_label(tmp_path: Path, loop) -> None:
    _cli, host, events, q = _dialog_session(tmp_path, loop)
    run(loop, host.answer(None, None, "Yes, and always allow access", None, re="a2"))
    sent = next(e for e in events if e["event"] == "answer_sent")
    assert sent["digit"] == "2" and sent["question_id"] == q["question_id"] and sent["re"] == "a2"


# ---------------------------------------------------------------------------------------------- versions


def test_a_new_cli_version_is_a_rules_subclass_overriding_one_marker(
    tmp_path: Path, loop, monkeypatch
) -> None:
    """The extension point: a (test-only) 2.2 whose prompt marker changed is one subclass overriding PROMPT and
    one line in `versions.RULES`; frames edited to use the new marker are read, with no engine change."""
    from litbridge.drivers.claude import v2_1, versions

    class V2_2(v2_1.Rules):
        PROMPT = "›"

    monkeypatch.setitem(versions.RULES, "2.2", V2_2)
    idle = [r.replace("❯", "›") for r in screen("s02_", "01_idle_before.txt")]
    assert v2_1.Rules().classify(idle).state == "other"  # the 2.1 rules do not see a prompt there
    assert versions.rules_for("2.1.328") is v2_1.Rules and versions.rules_for("2.2.0") is V2_2

    cli = FakeCLI(loop, {"idle": idle}, "idle", {})
    drv, host, events = make(tmp_path, cli, cli_version="2.2.0")
    assert isinstance(drv.rules, V2_2)
    assert boot(loop, host, events)["event"] == "ready"
    assert drv.can_accept_input() and host.state == "idle"
    cli21 = FakeCLI(loop, {"idle": idle}, "idle", {})
    drv21, _host21, _ = make(tmp_path / "b", cli21, cli_version="2.1.328")
    assert type(drv21.rules) is v2_1.Rules


def test_the_version_comes_from_claude_version_once_per_binary(tmp_path: Path) -> None:
    from litbridge.drivers.claude import versions

    calls = tmp_path / "calls"
    fake = tmp_path / "claude"
    fake.write_text(f'#!/bin/sh\necho x >> "{calls}"\necho "2.1.328 (Claude Code)"\n')
    fake.chmod(0o755)
    assert versions.cli_version(str(fake)) == "2.1.328"
    assert versions.cli_version(str(fake)) == "2.1.328"
    assert calls.read_text().count("x") == 1  # cached per binary
    assert versions.cli_version(str(tmp_path / "missing")) is None


def test_a_held_send_is_reported_then_ended_never_held_silently(tmp_path: Path, loop) -> None:
    """Text the user left in Claude's input box holds a send: `dialog_blocked` says why within seconds, and the
    send ends with `turn_error{timeout}` if the box never empties (here: after HOLD_LIMIT)."""
    from litbridge.session import HOLD_LIMIT

    typed = screen("s02_", "02_typed_prompt.txt")  # the prompt holds an unsent draft
    cli, _drv, host, events = _ready_driver(tmp_path, loop, {"idle": typed}, {}, start="idle")
    host.send("Queued behind the draft.")
    assert next(e for e in events if e["event"] == "accepted")["queued"] is True
    run(loop, asyncio.sleep(3.0))
    blocked = [e for e in events if e["event"] == "dialog_blocked"]
    assert len(blocked) == 1 and "unsent text" in blocked[0]["dialog"]
    assert not [k for _, k in cli.keys_seen if k.startswith(PASTE)]  # nothing typed over the user's draft
    run(loop, asyncio.sleep(HOLD_LIMIT), timeout=HOLD_LIMIT + 30)
    err = [e for e in events if e["event"] == "turn_error"]
    assert len(err) == 1 and err[0]["kind"] == "timeout" and "did not become live" in err[0]["message"]
    assert not host.turns.queue and host.turns.current is None


def test_a_send_into_a_dialog_is_blocked_then_released_after_the_answer(tmp_path: Path, loop) -> None:
    cli, host, events, q = _dialog_session(tmp_path, loop)
    host.send("After the dialog.")
    names = [e["event"] for e in events]
    assert "dialog_blocked" in names and "dialog_released" not in names
    run(loop, host.answer(q["question_id"], "1", None, None))
    run(loop, asyncio.sleep(1.0))
    names = [e["event"] for e in events]
    i_clear, i_rel = names.index("dialog_cleared"), names.index("dialog_released")
    assert i_clear < i_rel
    after = [e for e in events[i_rel + 1 :] if e["event"] == "state"]
    assert after and after[0]["to"] == "thinking"  # released, then the turn starts
    assert [k for _, k in cli.keys_seen if k.startswith(PASTE)]  # and the message was typed
