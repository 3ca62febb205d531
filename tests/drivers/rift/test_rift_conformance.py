"""Conformance checks of `rift --serve` protocol v1 behaviour the driver relies on, run against the fake by default
and against a real rift with RIFT_BIN=/path/to/rift (scripted-turn checks are skipped then).
"""

from __future__ import annotations

import json
import os

import pytest

RIFT_BIN = os.environ.get("RIFT_BIN")
fake_only = pytest.mark.skipif(bool(RIFT_BIN), reason="needs the fake's scripted turns (RIFT_BIN is set)")
V1_COMMANDS = [
    "hello",
    "prompt",
    "answer",
    "edit_decision",
    "cancel",
    "undo",
    "list_sessions",
    "list_models",
    "set_model",
    "set_approval",
]
LONG_PROMPT = "[long] Write a very long essay (at least 2000 words) about the history of rivers."
BUSY = "turn in progress — cancel it or wait for done"
UNKNOWN = (
    "unknown cmd (expected prompt/answer/edit_decision/cancel/undo/list_sessions/list_models/set_model/"
    "set_approval)"
)
STATS = {
    "iterations",
    "prompt_tokens",
    "billed_prompt_tokens",
    "output_tokens",
    "duration_ms",
    "tokens_per_sec",
}


def test_ready_first_with_every_field_then_context(spawn, project, sessions_dir):
    r = spawn()
    ready, context = r.startup()
    assert set(ready) >= {
        "model",
        "session",
        "cwd",
        "version",
        "protocol_version",
        "num_ctx",
        "approve",
        "skills",
        "commands",
    }
    assert ready["protocol_version"] == 1
    assert set(V1_COMMANDS) <= set(ready["commands"])
    assert os.path.realpath(ready["cwd"]) == os.path.realpath(project)
    assert isinstance(ready["num_ctx"], int) and isinstance(ready["approve"], bool)
    assert all(set(s) == {"name", "description"} for s in ready["skills"])
    assert context["limit"] == ready["num_ctx"] and isinstance(context["used"], int)
    # the session file is reserved empty under $HOME at startup
    assert os.path.dirname(ready["session"]) == str(sessions_dir)
    assert os.path.getsize(ready["session"]) == 0


def test_hello_is_acked_with_capabilities_and_idempotent(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "edit_review": True, "approve": True})
    caps = r.until("capabilities")[-1]
    assert caps == {"event": "capabilities", "protocol_version": 1, "edit_review": True, "approve": True}
    r.send({"cmd": "hello", "edit_review": "yes"})  # non-bool means false; approve unchanged
    caps = r.until("capabilities")[-1]
    assert caps["edit_review"] is False and caps["approve"] is True


def test_bad_json_and_unknown_commands_warn_and_keep_going(spawn):
    r = spawn()
    r.startup()
    r.send("{not json")
    warn = r.next()
    assert warn["event"] == "warning" and warn["text"].startswith("bad command json: ")
    for line in ('{"cmd":"frobnicate"}', "[1,2]", '{"text":"no cmd"}', '"prompt"'):
        r.send(line)
        assert r.next() == {"event": "warning", "text": UNKNOWN}
    r.send("")  # blank lines are ignored
    assert r.marker() == []


def test_empty_prompt_unknown_answer_and_idle_cancel_produce_nothing(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": ""})
    r.send({"cmd": "prompt", "text": "   \n "})
    r.send({"cmd": "answer", "id": 999, "text": "allow once"})
    r.send({"cmd": "answer", "id": "1", "text": "x"})
    r.send({"cmd": "edit_decision", "id": 999, "apply": True})
    r.send({"cmd": "cancel"})
    assert r.marker() == []


def test_unknown_skill_warns_and_starts_no_turn(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "/skill:definitely-not-installed do things"})
    assert r.next() == {"event": "warning", "text": "unknown skill 'definitely-not-installed'"}
    assert r.marker() == []


def test_busy_prompt_warns_and_is_not_queued(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": LONG_PROMPT})
    r.send({"cmd": "prompt", "text": "second"})
    events = r.until("warning", text=BUSY)
    assert not any(e["event"] == "done" for e in events)
    r.send({"cmd": "cancel"})
    r.until("done")
    r.until("context")
    # the rejected prompt never runs: nothing more arrives before the marker
    assert [e["event"] for e in r.marker()] == []


def test_turn_ends_with_one_done_then_context(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "Say hello in five words."})
    events = r.until("done")
    assert events[0] == {"event": "iteration", "n": 1}
    assert any(e["event"] == "content" for e in events)
    assert set(events[-1]["stats"]) == STATS
    assert events[-1]["stats"]["iterations"] >= 1
    after = r.until("context")
    assert not any(e["event"] == "done" for e in after)


def test_cancel_ordering_warning_then_done(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": LONG_PROMPT})
    r.until("content")
    r.send({"cmd": "cancel"})
    events = r.until("done")
    names = [e["event"] for e in events]
    assert "warning" in names
    cancelled = names.index("warning")
    assert events[cancelled]["text"] == "turn cancelled"
    assert all(n in ("content", "thinking") for n in names[:cancelled])
    assert names[cancelled + 1 :] == ["done"]
    r.until("context")


def test_eof_mid_turn_means_no_more_events_exit_0_and_session_saved(spawn):
    r = spawn()
    ready, _ = r.startup()
    r.send({"cmd": "prompt", "text": "first turn"})
    r.until("done")
    r.until("context")
    r.send({"cmd": "prompt", "text": LONG_PROMPT})
    r.until("content")
    r.close_stdin()
    assert r.wait() == 0
    while (ev := r.next()) is not None:  # whatever was already in flight; no done after EOF
        assert ev["event"] in ("content", "thinking"), ev
    saved = json.loads(open(ready["session"], encoding="utf-8").read())
    assert (
        saved["messages"][0] == {"role": "user", "content": "first turn"}
        or saved["messages"][0].get("content") == "first turn"
    )


def test_startup_failure_exits_without_ready(spawn):
    if RIFT_BIN:
        r = spawn("--host", "http://127.0.0.1:9")
    else:
        r = spawn(env={"FAKE_RIFT_FAIL": "1"})
    assert r.wait() != 0
    assert r.next() is None  # no ready, no output at all
    assert any("Error: cannot reach" in line for line in r.stderr)


def test_unknown_flag_exits_2(spawn):
    r = spawn("--definitely-not-a-flag")
    assert r.wait() == 2
    assert r.next() is None


def test_set_approval_and_control_warnings(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "set_approval", "approve": False})
    assert r.next() == {"event": "approval_changed", "approve": False}
    r.send({"cmd": "set_approval", "approve": "no"})
    assert r.next() == {"event": "warning", "text": "set_approval needs a boolean 'approve' field"}
    r.send({"cmd": "set_model", "model": "  "})
    assert r.next() == {"event": "warning", "text": "set_model needs a 'model' field"}
    r.send({"cmd": "undo"})
    assert r.next() == {
        "event": "warning",
        "text": "nothing to undo (only write/edit tool changes are tracked)",
    }


def test_list_models_is_answered_asynchronously(spawn):
    r = spawn()
    ready, _ = r.startup()
    r.send({"cmd": "list_models"})
    models = r.until("models")[-1]
    assert models["current"] == ready["model"] and isinstance(models["models"], list)


def test_models_and_approval_answers_interleave_mid_turn(spawn):
    r = spawn(env={"FAKE_RIFT_SPEED": "0.05"})
    r.startup()
    r.send({"cmd": "prompt", "text": LONG_PROMPT})
    r.until("content")
    r.send({"cmd": "set_approval", "approve": True})  # safe mid-turn, answered at once
    r.send({"cmd": "list_models"})
    events = r.until("models")
    assert "approval_changed" in [e["event"] for e in events]
    assert not any(e["event"] == "done" for e in events)  # both arrived inside the turn
    r.send({"cmd": "cancel"})
    r.until("done")


def test_list_sessions_shape(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "remember me"})
    r.until("context")
    assert r.marker() == []
    items = r.seen[-1]["items"]
    assert items and set(items[0]) == {"path", "title", "saved_at", "cwd", "model", "turns"}
    assert items[0]["title"] == "remember me" and items[0]["turns"] == 1


# ---------- scripted behaviour: the fake only ----------


@fake_only
def test_commands_written_before_ready_are_handled_in_order(spawn):
    r = spawn()
    r.send({"cmd": "hello", "approve": False})
    r.send({"cmd": "bogus"})
    r.send({"cmd": "set_approval", "approve": True})
    r.startup()
    assert [r.next()["event"] for _ in range(3)] == ["capabilities", "warning", "approval_changed"]


@fake_only
def test_bash_approval_ask_exact_choices_and_exact_match(spawn, project):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "[bash:echo hi > out.txt]"})
    events = r.until("ask")
    start = next(e for e in events if e["event"] == "tool_start")
    assert isinstance(start["args"], str) and json.loads(start["args"]) == {"command": "echo hi > out.txt"}
    ask = events[-1]
    assert ask["id"] == 1 and ask["question"] == "Allow bash: echo hi > out.txt" and ask["detail"] == []
    assert ask["choices"] == ["allow once", "always allow 'echo *'", "allow all bash this session", "deny"]
    r.send({"cmd": "answer", "id": 1, "text": "Allow Once"})  # not exact: a deny
    result = r.until("tool_result")[-1]
    assert result["ok"] is False and result["preview"].startswith("ERROR: the user DENIED this bash action.")
    r.until("done")
    assert not (project / "out.txt").exists()
    r.send({"cmd": "prompt", "text": "[bash:echo hi > out.txt]"})
    ask = r.until("ask")[-1]
    assert ask["id"] == 2
    r.send({"cmd": "answer", "id": 2, "text": "allow once"})
    assert r.until("tool_result")[-1]["ok"] is True
    r.until("done")
    assert (project / "out.txt").read_text() == "hi\n"


@fake_only
def test_edit_review_shares_the_id_counter_and_cancel_closes_it_first(spawn, project):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "[ask:Which name?|alpha|beta]"})
    ask = r.until("ask")[-1]
    assert ask["id"] == 1 and ask["choices"] == ["alpha", "beta"]
    r.send({"cmd": "answer", "id": 1, "text": "beta"})
    r.until("done")
    r.send({"cmd": "hello", "edit_review": True})
    r.until("capabilities")
    r.send({"cmd": "prompt", "text": "[write:notes.txt:hello]"})
    review = r.until("edit_review")[-1]
    assert (
        review["id"] == 2 and review["tool"] == "write" and review["old"] == "" and review["new"] == "hello"
    )
    assert review["path"] == str(project / "notes.txt")
    r.send({"cmd": "cancel"})
    events = r.until("done")
    names = [e["event"] for e in events]
    assert names[0] == "edit_review_closed" and events[0]["id"] == 2
    assert names[-2:] == ["warning", "done"] and events[-2]["text"] == "turn cancelled"
    assert {
        "event": "tool_result",
        "name": "write",
        "ok": False,
        "preview": "ERROR: cancelled by user",
    } in events
    assert not (project / "notes.txt").exists()


@fake_only
def test_edit_review_accepted_writes_then_edit_diff(spawn, project):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "edit_review": True})
    r.until("capabilities")
    r.send({"cmd": "prompt", "text": "[write:notes.txt:line one]"})
    review = r.until("edit_review")[-1]
    r.send({"cmd": "edit_decision", "id": review["id"], "apply": True, "content": "edited by user"})
    events = r.until("done")
    names = [e["event"] for e in events]
    assert names.index("edit_diff") == names.index("tool_result") + 1
    assert (project / "notes.txt").read_text() == "edited by user"
    r.until("context")
    r.send({"cmd": "undo"})
    info = r.until("info")[-1]
    assert info["text"].startswith("restored to pre-turn state:") and not (project / "notes.txt").exists()


@fake_only
def test_edit_review_not_sent_when_approval_is_off(spawn, project):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "edit_review": True, "approve": False})
    r.until("capabilities")
    r.send({"cmd": "prompt", "text": "[write:a.txt:x]"})
    names = [e["event"] for e in r.until("done")]
    assert "edit_review" not in names and "ask" not in names
    assert (project / "a.txt").read_text() == "x"


@fake_only
def test_cancel_during_running_tool_reports_cancelled_result(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "approve": False})
    r.send({"cmd": "prompt", "text": "[bash:sleep 30]"})
    r.until("tool_start")
    r.send({"cmd": "cancel"})
    events = r.until("done")
    assert events[-3:-1] == [
        {"event": "tool_result", "name": "bash", "ok": False, "preview": "ERROR: cancelled by user"},
        {"event": "warning", "text": "turn cancelled"},
    ]


@fake_only
def test_cancel_gives_every_remaining_call_a_cancelled_result(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "approve": False})
    r.send({"cmd": "prompt", "text": "[bash:sleep 30] [bash:echo never]"})
    r.until("tool_start")
    r.send({"cmd": "cancel"})
    events = [e for e in r.until("done") if e["event"] in ("tool_start", "tool_result", "warning", "done")]
    assert [e["event"] for e in events] == ["tool_result", "tool_start", "tool_result", "warning", "done"]
    assert json.loads(events[1]["args"]) == {"command": "echo never"}
    assert all(e["preview"] == "ERROR: cancelled by user" for e in events if e["event"] == "tool_result")


@fake_only
def test_error_turn_warns_then_done_with_zero_stats(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "[error]"})
    events = r.until("done")
    assert events[-2]["event"] == "warning" and events[-2]["text"].startswith("error: ")
    assert events[-1]["stats"] == {k: 0 for k in STATS} | {"tokens_per_sec": 0.0}


@fake_only
def test_tool_result_preview_is_capped_and_flattened(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "hello", "approve": False})
    r.send({"cmd": "prompt", "text": "[bash:seq 1 400]"})
    preview = r.until("tool_result")[-1]["preview"]
    assert "\n" not in preview and preview.endswith("…") and len(preview.encode()) <= 200 + len("…".encode())


@fake_only
def test_set_model_changes_then_context_and_is_rejected_mid_turn(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "set_model", "model": "llama3.1:8b"})
    assert [e["event"] for e in r.until("context")] == ["model_changed", "context"]
    assert r.seen[-2]["model"] == "llama3.1:8b"
    r.send({"cmd": "prompt", "text": LONG_PROMPT})
    r.send({"cmd": "set_model", "model": "qwen3:8b"})
    r.until("warning", text="turn in progress — cancel it or wait before switching models")
    r.send({"cmd": "cancel"})
    r.until("done")


@fake_only
def test_resume_replays_history_and_lenient_missing_file(spawn, sessions_dir, tmp_path):
    r = spawn()
    ready, _ = r.startup()
    r.send({"cmd": "prompt", "text": "my word is banana"})
    r.until("context")
    r.stop()
    assert not list(sessions_dir.glob("*.tmp"))
    r2 = spawn("--resume", ready["session"])
    ready2, _ = r2.startup()
    assert ready2["session"] == ready["session"]
    history = r2.next()
    assert history["event"] == "history"
    assert history["messages"][0] == {"role": "user", "text": "my word is banana"}
    assert history["messages"][1]["role"] == "assistant"
    r2.send({"cmd": "prompt", "text": "[recall]"})
    text = "".join(e["text"] for e in r2.until("done") if e["event"] == "content")
    assert "banana" in text
    missing = tmp_path / "nowhere" / "s.json"
    r3 = spawn("--resume", str(missing))
    ready3, _ = r3.startup()
    assert ready3["session"] == str(missing)
    assert r3.marker() == []  # no history for a fresh session


@fake_only
def test_continue_picks_newest_non_empty_session(spawn, sessions_dir):
    r = spawn("--continue")
    ready, _ = r.startup()  # nothing to continue: fresh
    r.send({"cmd": "prompt", "text": "continue me"})
    r.until("context")
    spawn().startup()  # an empty newer file must be skipped
    r2 = spawn("-c")
    ready2, _ = r2.startup()
    assert ready2["session"] == ready["session"]
    assert r2.next()["event"] == "history"


@fake_only
def test_plugin_trust_ask_on_first_hello(spawn):
    r = spawn(env={"FAKE_RIFT_PLUGIN": "lint"})
    r.startup()
    r.send({"cmd": "hello"})
    events = r.until("ask")
    ask = events[-1]
    assert ask["choices"] == ["trust", "skip"] and "Trust this manifest" in ask["question"]
    r.send({"cmd": "hello"})
    assert r.until("capabilities")[-1]["event"] == "capabilities"
    r.send({"cmd": "answer", "id": ask["id"], "text": "TRUST"})
    assert "trusted" in r.until("info")[-1]["text"]


@fake_only
def test_background_task_events_between_turns(spawn):
    r = spawn()
    r.startup()
    r.send({"cmd": "prompt", "text": "[task] start it"})
    r.until("context")
    started = r.next()
    finished = r.next()
    assert started["event"] == "task_started" and finished["event"] == "task_finished"
    assert started["id"] == finished["id"] == 1 and finished["ok"] is True
