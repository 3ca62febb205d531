"""opencode's store rows -> turn events (`store.SessionTurns`), and the rules on observed screens; pure."""

from __future__ import annotations

import json
from typing import Any

from litbridge.drivers.opencode.store import SessionTurns, db_path
from litbridge.drivers.opencode.v1_18 import Rules

SID = "ses_x"


def row(kind: str, **payload: Any) -> dict[str, Any]:
    return {"sid": SID, "type": kind, "data": json.dumps({"sessionID": SID, **payload})}


def msg(mid: str, role: str, **info: Any) -> dict[str, Any]:
    return row("message.updated.1", info={"id": mid, "role": role, **info})


def part(pid: str, mid: str, **p: Any) -> dict[str, Any]:
    return row("message.part.updated.1", part={"id": pid, "messageID": mid, **p})


def kinds(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in events]


def test_a_tool_turn_ends_on_the_stop_step_with_its_exact_text_and_usage() -> None:
    t = SessionTurns()
    steps = {"input": 10, "output": 2, "cache": {"read": 1, "write": 0}}
    ev = t.feed(
        [
            msg("msg_1", "user"),
            part("prt_1", "msg_1", type="text", text="run it?"),
            msg("msg_2", "assistant"),
            part("prt_2", "msg_2", type="text", text="Let me run it."),
            part(
                "prt_3",
                "msg_2",
                type="tool",
                callID="c1",
                tool="bash",
                state={"status": "pending", "input": {}},
            ),
            part(
                "prt_3",
                "msg_2",
                type="tool",
                callID="c1",
                tool="bash",
                state={"status": "running", "input": {"command": "echo hi"}},
            ),
            part(
                "prt_3",
                "msg_2",
                type="tool",
                callID="c1",
                tool="bash",
                state={"status": "completed", "input": {"command": "echo hi"}, "output": "hi\n"},
            ),
            part("prt_4", "msg_2", type="step-finish", reason="tool-calls", tokens=steps),
            msg("msg_2", "assistant", time={"created": 1, "completed": 2}, finish="tool-calls"),
            msg("msg_3", "assistant"),
            part("prt_5", "msg_3", type="text", text="日本語 🎉?\nDone."),
            part("prt_6", "msg_3", type="step-finish", reason="stop", tokens=steps),
            msg("msg_3", "assistant", time={"created": 3, "completed": 4}, finish="stop"),
        ]
    )
    assert kinds(ev) == [
        ("prompt", "run it?"),
        ("tool_use", "bash"),
        ("tool_result", "hi\n"),
        ("complete", "日本語 🎉?\nDone."),
    ]
    assert ev[1].data == {"id": "c1", "input": {"command": "echo hi"}}
    assert ev[-1].data["usage"] == {
        "input_tokens": 20,
        "output_tokens": 4,
        "cache_read_tokens": 2,
        "cache_creation_tokens": 0,
    }


def test_abort_is_interrupted_an_api_error_is_an_error_and_a_rejected_tool_ends_the_turn() -> None:
    t = SessionTurns()
    ev = t.feed(
        [
            msg("msg_1", "user"),
            part("prt_1", "msg_1", type="text", text="slow"),
            msg("msg_2", "assistant"),
            part("prt_2", "msg_2", type="text", text="partial"),
            msg(
                "msg_2", "assistant", time={"completed": 2}, error={"name": "MessageAbortedError", "data": {}}
            ),
            msg("msg_3", "user"),
            part("prt_3", "msg_3", type="text", text="fail"),
            msg(
                "msg_4",
                "assistant",
                time={"completed": 3},
                error={"name": "APIError", "data": {"message": "mock error 400"}},
            ),
            msg("msg_5", "user"),
            part("prt_5", "msg_5", type="text", text="rm"),
            part(
                "prt_6",
                "msg_6",
                type="tool",
                callID="c2",
                tool="bash",
                state={
                    "status": "error",
                    "input": {"command": "rm x"},
                    "error": "The user rejected permission to use this specific tool call.",
                },
            ),
            msg("msg_6", "assistant", time={"completed": 4}, finish="tool-calls"),
        ]
    )
    assert [k for k, _ in kinds(ev)] == [
        "prompt",
        "interrupted",
        "prompt",
        "error",
        "prompt",
        "tool_use",
        "tool_result",
        "complete",
    ]
    assert ev[1].text == "partial" and ev[3].text == "mock error 400"
    assert ev[6].data["is_error"] is True


def test_db_path_follows_opencode_db_and_xdg_data_home() -> None:
    assert str(db_path({"HOME": "/h"})) == "/h/.local/share/opencode/opencode.db"
    assert str(db_path({"HOME": "/h", "XDG_DATA_HOME": "/d"})) == "/d/opencode/opencode.db"
    assert str(db_path({"HOME": "/h", "OPENCODE_DB": "other.db"})) == "/h/.local/share/opencode/other.db"
    assert str(db_path({"HOME": "/h", "OPENCODE_DB": "/x/y.db"})) == "/x/y.db"
    assert db_path({"HOME": "/h", "OPENCODE_DB": ":memory:"}) is None


PERMISSION = [
    "  ┃  △ Permission required",
    "  ┃    # Shell command",
    "  ┃",
    "  ┃  $ rm -f README.md",
    "  ┃" + " " * 150 + "~/work/proj",
    "  ┃   Allow once   Allow always   Reject" + " " * 60 + "ctrl+f fullscreen  ⇆ select  enter confirm",
]


def test_the_permission_prompt_is_numbered_and_answered_with_left_right() -> None:
    rules = Rules()
    r = rules.classify(
        [""] * 40 + PERMISSION, highlight=lambda y, x: x == 3 + len("  ┃") + len("Allow once   ")
    )
    assert r.state == "dialog" and r.dialog is not None
    d = r.dialog
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "Allow once", False),
        ("2", "Allow always", True),
        ("3", "Reject", False),
    ]
    assert d.fields == {"title": "Shell command", "command": "rm -f README.md"}
    assert rules.dialog_keys(d, 2) == ["Right", "Enter"]
    assert rules.dialog_keys(d, 0) == ["Left", "Enter"]


def test_busy_idle_and_draft() -> None:
    rules = Rules()
    box = ["  ┃", "  ┃  half typed", "  ┃", "  ┃  Build · Mock Mock", "  ╹" + "▀" * 100]
    idle = rules.classify(
        [""] * 40 + box + ["   ~/work/proj      8.2K  ctrl+p commands    • OpenCode 1.18.33"]
    )
    assert (idle.state, idle.draft, idle.version) == ("idle", "half typed", "1.18.33")
    busy = rules.classify([""] * 40 + box + ["   ■■■⬝⬝⬝⬝⬝  esc interrupt      tab agents  ctrl+p commands"])
    assert busy.state == "busy" and busy.spinner == "■■■⬝⬝⬝⬝⬝  esc interrupt"
