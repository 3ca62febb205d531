"""The session recorder (tests/fixtures/record_session.py), checked on a small raw-mode TUI: its capture folder
round-trips through `litbridge.replay` (chunks byte-exact, typed keys without the auto-replies, record-file lines
at the times they were written), the terminal queries are answered where they were asked, and the screens and
metadata are written."""

from __future__ import annotations

import base64
import itertools
import json
import sqlite3
import sys
from pathlib import Path

import pytest

pytest.importorskip("ptyprocess")

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

import record_session
from lbd_helpers import check_event

from litbridge.replay import Capture, RecordedChild, replay
from litbridge.vclock import VirtualTimeLoop

TOY = r"""
import json, os, select, sqlite3, sys, termios, time, tty

fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
home = os.environ["HOME"]
rec = os.path.join(home, ".toy", "sessions", "s1.jsonl")
os.makedirs(os.path.dirname(rec), exist_ok=True)
db = sqlite3.connect(os.path.join(home, ".toy", "toy.db"))
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS said (text TEXT)")


def out(s):
    os.write(1, s.encode())


def reply(end):
    buf = b""
    while not buf.endswith(end):
        if not select.select([fd], [], [], 10)[0]:
            break
        buf += os.read(fd, 1)
    return buf


def log(obj, split=False):
    line = json.dumps(obj, ensure_ascii=False) + "\n"
    with open(rec, "a") as fh:
        if split:  # a line written in two pieces: the recorder must wait for its newline
            fh.write(line[:5])
            fh.flush()
            time.sleep(0.2)
            line = line[5:]
        fh.write(line)


out("abc\x1b[6n")
cpr = reply(b"R")
out("\x1b[c")
da = reply(b"c")
out("\x1b]11;?\x1b\\")
bg = reply(b"\x1b\\")
out("\x1b[?u\x1b[c")
kitty = reply(b"c")
out("\r\n" + repr([cpr, da, bg, kitty]) + "\r\n\x1b]0;toy title\x07")
log({"type": "start"})
while True:
    out("ready> ")
    buf = b""
    while not buf.endswith(b"\r"):
        b = os.read(fd, 1)
        buf += b
        os.write(1, b if b != b"\r" else b"")
    text = buf[:-1].replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"").decode()
    if text == "q":
        break
    out("\r\ngot: " + text.replace("\n", " | ") + "\r\n")
    log({"type": "user", "text": text}, split=True)
    db.execute("INSERT INTO said VALUES (?)", (text,))
    db.commit()
termios.tcsetattr(fd, termios.TCSADRAIN, old)
out("\r\nbye\r\n")
sys.exit(3)
"""

STEPS = [
    {"wait": r"^ready>$", "timeout": 60},
    {
        "quiet": 1.2,
        "timeout": 60,
    },  # idle long enough for the generic driver's start-up settle (the replay's ready)
    {"snapshot": "idle"},
    {"say": "héllo 你好 🙂?", "label": "q1"},
    {"wait": r"got: héllo 你好 🙂\?", "timeout": 60},
    {"paste": "two\nlines", "label": "p"},
    {"key": "enter"},
    {"wait": r"got: two \| lines", "timeout": 60},
    {"quiet": 0.2},
    {"snapshot": "after paste"},
    {"say": "q", "label": "quit"},
    {"wait_exit": 60},
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    base = tmp_path_factory.mktemp("rec")
    home, out = base / "home", base / "cap"
    (home / ".toy" / "sessions").mkdir(parents=True)
    (home / ".toy" / "sessions" / "s1.jsonl").write_text('{"type": "earlier"}\n')  # a resumed session's past
    with sqlite3.connect(home / ".toy" / "toy.db") as db:  # a row there before the spawn: not recorded
        db.execute("CREATE TABLE said (text TEXT)")
        db.execute("INSERT INTO said VALUES ('earlier')")
    toy = base / "toy.py"
    toy.write_text(TOY)
    meta = record_session.record(
        out,
        [sys.executable, str(toy)],
        STEPS,
        home=home,
        cwd=base,
        env={"TOY_API_KEY": "sk-very-secret-value"},
        watch=[".toy/sessions/**/*.jsonl"],
        snapshot_files=[".toy/*.db"],
        transcripts_base=home / ".toy",
        watch_sqlite={".toy/*.db": ["said"]},
    )
    return home, out, meta


def test_capture_round_trips_through_capture_load(recorded: tuple[Path, Path, dict]) -> None:
    home, out, meta = recorded
    cap = Capture.load(out)
    raw = [json.loads(line) for line in (out / "chunks.jsonl").read_text().splitlines()]
    assert [c["n"] for c in raw] == list(range(len(raw))) == list(range(meta["n_chunks"]))
    assert all(a["t"] <= b["t"] for a, b in itertools.pairwise(raw))
    # t=0 is the spawn on both clocks: a record's wall-clock stamps minus `start_wall` are on the `t` axis
    assert all(abs(c["wall"] - c["t"] - meta["start_wall"]) < 0.002 for c in raw)
    output = b"".join(data for _, data in cap.chunks)
    assert output == b"".join(base64.b64decode(c["b64"]) for c in raw)
    assert "got: héllo 你好 🙂?".encode() in output and b"got: two | lines" in output
    # the keys the replay types: the recorder's own, in order, without the automatic replies
    typed = [data for _, data in cap.keys]
    assert typed == [
        "héllo 你好 🙂?".encode(),
        b"\r",
        b"\x1b[200~two\nlines\x1b[201~",
        b"\r",
        b"q",
        b"\r",
    ]
    keys = [json.loads(line) for line in (out / "keys.jsonl").read_text().splitlines()]
    assert [k["label"] for k in keys if not k["label"].startswith("auto-reply:")] == [
        "q1:text",
        "q1:enter",
        "p",
        "key:enter",
        "quit:text",
        "quit:enter",
    ]
    assert keys[1]["repr"] == "\\x1b[?6c" and keys[-1]["repr"] == "\\r"
    assert cap.exit_code == 3 and cap.cli == Path(sys.executable).name
    assert meta["exit_status"] == {"exitstatus": 3, "signalstatus": None} and meta["exit_via"] == "exit"
    assert meta["env"]["TOY_API_KEY"] == "sk-ver…(20 chars)" and meta["env"]["HOME"] == str(home)
    assert (meta["cols"], meta["rows"]) == (200, 50)


def test_terminal_queries_are_answered_in_place(recorded: tuple[Path, Path, dict]) -> None:
    _, out, meta = recorded
    keys = [json.loads(line) for line in (out / "keys.jsonl").read_text().splitlines()]
    auto = [(k["label"], base64.b64decode(k["b64"])) for k in keys if k["label"].startswith("auto-reply:")]
    assert auto == [
        ("auto-reply:dsr6", b"\x1b[1;4R"),  # the cursor after "abc", when the query was read
        ("auto-reply:da1", b"\x1b[?6c"),
        ("auto-reply:osc_color", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
        ("auto-reply:da1", b"\x1b[?6c"),  # the kitty query is left unanswered by default
    ]
    assert "kitty" in meta["asked"] and "kitty" not in meta["answers"]
    # what the toy read back (it prints the replies it got)
    screen = (out / "screens" / "01_idle.txt").read_text()
    assert r"[b'\x1b[1;4R', b'\x1b[?6c', b'\x1b]11;rgb:0000/0000/0000\x1b\\', b'\x1b[?6c']" in screen
    states = [json.loads(line) for line in (out / "states.jsonl").read_text().splitlines()]
    assert {"title": "toy title"}.items() <= states[0].items()
    assert states[-1]["exit"] == {"exitstatus": 3, "signalstatus": None}


def test_record_files_are_watched_and_copied(recorded: tuple[Path, Path, dict]) -> None:
    home, out, _ = recorded
    src = home / ".toy" / "sessions" / "s1.jsonl"
    copy = out / "transcripts" / "sessions" / "s1.jsonl"
    assert copy.read_bytes() == src.read_bytes()
    watch = [json.loads(line) for line in (out / "transcript_watch.jsonl").read_text().splitlines()]
    assert watch[0]["t"] == 0.0 and watch[0]["lines"] == []  # what the file held before the CLI started
    summaries = [s for w in watch for s in w["lines"]]
    assert [s["type"] for s in summaries] == ["start", "user", "user"]  # whole lines only, each once
    cap = Capture.load(out)
    lines = [(t, name, json.loads(line)) for t, name, line in cap.transcript]
    assert [(name, obj["type"]) for _, name, obj in lines] == [
        ("s1.jsonl", "earlier"),
        ("s1.jsonl", "start"),
        ("s1.jsonl", "user"),
        ("s1.jsonl", "user"),
    ]
    assert lines[0][0] == 0.0 and 0 < lines[1][0] < lines[2][0] < lines[3][0]
    assert [obj.get("text") for _, _, obj in lines[2:]] == ["héllo 你好 🙂?", "two\nlines"]
    assert cap.transcript_dirs == {"s1.jsonl": "sessions"}
    db = out / "transcripts" / "toy.db"
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT text FROM said")] == [
            "earlier",
            "héllo 你好 🙂?",
            "two\nlines",
        ]


def test_sqlite_rows_are_recorded_as_they_come_and_replayed_at_their_times(
    recorded: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    """A watched table's new rows, each with the time the poller saw it (the row there before the spawn left out),
    and its schema; `Capture.replay_sqlite` creates the table empty and the replay inserts the rows at their times,
    with their rowids."""
    _, out, _ = recorded
    cap = Capture.load(out)
    assert cap.sqlite_schema == {"toy.db": {"said": ["CREATE TABLE said (text TEXT)"]}}
    assert [(r.db, r.table, r.rowid, r.row) for r in cap.sqlite] == [
        ("toy.db", "said", 2, {"text": "héllo 你好 🙂?"}),
        ("toy.db", "said", 3, {"text": "two\nlines"}),
    ]
    said = [t for t, _name, line in cap.transcript if json.loads(line)["type"] == "user"]
    assert [round(r.t, 1) for r in cap.sqlite] == pytest.approx([round(t, 1) for t in said], abs=0.3)
    (db,) = cap.replay_sqlite(tmp_path)
    assert db == tmp_path / "toy.db" and cap.sqlite_root == tmp_path
    seen: list[list[tuple[int, str]]] = []

    def look(_data: bytes) -> None:
        with sqlite3.connect(db) as conn:
            seen.append(conn.execute("SELECT rowid, text FROM said").fetchall())

    loop = VirtualTimeLoop()
    child = RecordedChild(cap, tmp_path / "t", tail=0.0)
    try:
        child.start(loop, look, lambda _code: loop.stop())
        loop.run_forever()
    finally:
        loop.close()
    # (the exit may stop the loop before a last chunk recorded at the same instant is fed: compare what was fed)
    before = [rows for rows, (t, _) in zip(seen, cap.chunks, strict=False) if t < cap.sqlite[0].t]
    assert before and all(rows == [] for rows in before)  # nothing before its recorded time
    # every row is in by the end; the last chunk fed may come before the last row (recorded on a loaded machine,
    # the poller saw row 3 after the CLI's last output), so the end is read from the table itself
    assert all(
        rows in ([], [(2, "héllo 你好 🙂?")], [(2, "héllo 你好 🙂?"), (3, "two\nlines")]) for rows in seen
    )
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT rowid, text FROM said").fetchall() == [
            (2, "héllo 你好 🙂?"),
            (3, "two\nlines"),
        ]


def test_screens_are_pyte_renderings(recorded: tuple[Path, Path, dict]) -> None:
    _, out, _ = recorded
    names = sorted(p.name for p in (out / "screens").iterdir())
    assert names == ["01_idle.txt", "02_after_paste.txt", "03_final.txt"]
    idle = (out / "screens" / "01_idle.txt").read_text()
    assert len(idle.splitlines()) == 50 and idle.splitlines()[2] == "ready>"
    final = (out / "screens" / "03_final.txt").read_text()
    assert "got: two | lines" in final and "bye" in final


def test_replay_plays_the_recording(recorded: tuple[Path, Path, dict]) -> None:
    _, out, _ = recorded
    events = replay(out, fast=True, tail=3.0)
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    assert [e["event"] for e in events if e["event"] in ("ready", "exited")] == ["ready", "exited"]
    assert events[-1]["exit_code"] == 3
    assert (
        "got: two | lines" in events[-1]["stderr_tail"]
    )  # the recorded output, through the session's screen


def test_kitty_query_answered_when_asked_and_the_command_line(tmp_path: Path) -> None:
    toy = tmp_path / "toy.py"
    toy.write_text(TOY)
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([{"wait": "ready>", "timeout": 60}, {"say": "q"}, {"wait_exit": 60}]))
    out = tmp_path / "cap"
    rc = record_session.main(
        [str(out), "--answer-kitty", "--steps", str(steps), "--", sys.executable, str(toy)]
    )
    assert rc == 0
    keys = [json.loads(line) for line in (out / "keys.jsonl").read_text().splitlines()]
    assert ("auto-reply:kitty", b"\x1b[?0u") in [(k["label"], base64.b64decode(k["b64"])) for k in keys]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["exit_code"] == 3 and not Path(meta["home"]).exists()  # the temporary HOME is removed
    assert Capture.load(out).keys == [(keys[-2]["t"], b"q"), (keys[-1]["t"], b"\r")]
