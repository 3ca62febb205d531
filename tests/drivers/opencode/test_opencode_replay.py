"""`litbridge replay` on the opencode 1.18.33 recordings (tests/fixtures/captures/opencode): the real Session and
opencode driver over the recorded output, with the recorded `event` rows inserted into a fresh database at the times
the recorder saw them (`sqlite_watch.jsonl`), on the virtual clock. The prompts were typed into opencode itself, so
each turn is an organic one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from lbd_helpers import TurnOrder, busy_during_turn, check_event

from litbridge.drivers.opencode.driver import OpencodeDriver
from litbridge.replay import Capture, replay

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "opencode"
TERMINAL = ("complete", "interrupted", "turn_error")

EXPECTED = {
    "opencode_plain_qa": [("complete", "Line one? Yes?\n日本語のテスト 🎉 done\n\n**Last** line.")],
    "opencode_approval": [("complete", "Done: the file was created.")],
    "opencode_interrupt": [("interrupted", None)],  # the partial text: whatever the database holds
}


def record_endings(cap: Capture) -> list[tuple[str, str]]:
    """The turn endings the recorded rows hold: each completed assistant message that ends its turn (an error, an
    abort, or a finish other than `tool-calls`), with its text parts joined."""
    texts: dict[str, dict[str, str]] = {}
    out = []
    for r in cap.sqlite:
        data = json.loads(r.row["data"])
        part, info = data.get("part") or {}, data.get("info") or {}
        if part.get("type") == "text" and not part.get("synthetic"):
            texts.setdefault(part["messageID"], {})[part["id"]] = part.get("text") or ""
        if r.row["type"].startswith("message.updated") and info.get("role") == "assistant":
            if not (info.get("time") or {}).get("completed"):
                continue
            text = "".join(t for _, t in sorted(texts.get(info["id"], {}).items()))
            error = info.get("error") or {}
            if error.get("name") == "MessageAbortedError":
                out.append(("interrupted", text))
            elif not error and info.get("finish") != "tool-calls":
                out.append(("complete", text))
    return out


@pytest.fixture(scope="module")
def replays() -> dict[str, list[dict]]:
    return {name: replay(Capture.load(CAPTURES / name), fast=True) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_ends_each_turn_once_with_the_databases_content(
    name: str, replays: dict[str, list[dict]]
) -> None:
    cap = Capture.load(CAPTURES / name)
    endings = record_endings(cap)
    assert [kind for kind, _ in endings] == [kind for kind, _ in EXPECTED[name]]
    for (_, text), (_, want) in zip(endings, EXPECTED[name], strict=True):
        assert want is None or text == want  # the test's expectations are the record's
    events = replays[name]
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    TurnOrder().check(events)  # the state settles before each terminal event
    ends = [e for e in events if e["event"] in TERMINAL]
    assert [(e["event"], e["content"]) for e in ends] == endings
    accepted = [e["turn_id"] for e in events if e["event"] == "accepted"]
    assert sorted(e["turn_id"] for e in ends) == sorted(accepted)  # exactly one terminal event per turn
    for end in ends:
        assert busy_during_turn(events, end) & {"thinking", "responding"}, end
    assert all(e["source"] == "transcript" for e in ends if e["event"] == "complete")
    assert next(e for e in events if e["event"] == "ready")["resumed"] is False
    assert events[-1]["event"] == "exited"


def test_replay_asks_the_permission_as_a_question_then_runs_the_tool(replays: dict[str, list[dict]]) -> None:
    events = replays["opencode_approval"]
    (q,) = [e for e in events if e["event"] == "question"]
    assert q["kind"] == "permission"
    assert [(o["digit"], o["label"]) for o in q["options"]] == [
        ("1", "Allow once"),
        ("2", "Allow always"),
        ("3", "Reject"),
    ]
    assert q["detail"]["command"] == "touch made.txt && echo hi-there"
    uses = [e for e in events if e["event"] == "tool_use"]
    results = [e for e in events if e["event"] == "tool_result"]
    assert [(u["name"], u["input"]["command"]) for u in uses] == [("bash", "touch made.txt && echo hi-there")]
    assert [(r["tool_use_id"], r["content"].strip()) for r in results] == [
        (uses[0]["tool_use_id"], "hi-there")
    ]
    order = [e["event"] for e in events if e["event"] in ("question", "tool_result", "complete")]
    assert order == ["question", "tool_result", "complete"]


def test_replay_setup_creates_the_database_from_the_recorded_schema(tmp_path: Path) -> None:
    """The database, empty, where the replay's env names it (HOME, XDG_DATA_HOME and OPENCODE_DB all point into
    the private HOME: a user's own settings are not read); its rows come at their recorded times."""
    cap = Capture.load(CAPTURES / "opencode_plain_qa")
    options, _folder = OpencodeDriver.replay_setup(cap, tmp_path)
    db = tmp_path / ".local" / "share" / "opencode" / "opencode.db"
    assert options["env"] == {
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / ".local" / "share"),
        "OPENCODE_DB": str(db),
    }
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM event").fetchone() == (0,)
    assert cap.sqlite and cap.sqlite_root == tmp_path
    assert [r.rowid for r in cap.sqlite] == sorted(r.rowid for r in cap.sqlite)
