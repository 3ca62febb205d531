"""Replay a recorded CLI session through the real `Session` (driver, engine, bookkeeping) over a fake child.

A capture folder (`chunks.jsonl` + `keys.jsonl` + `transcript_watch.jsonl` + `transcripts/`, or an asciicast v2
`.cast`) is played by `RecordedChild`, a stand-in for the PTY child: its output chunks arrive at their recorded
times, its transcript lines are appended to the config dir the driver reads, at the times they hit the disk,
and it exits with the recorded code. The recorder's own keystrokes (`keys.jsonl`, minus the automatic replies to
terminal queries) are typed into the session the way an attached user types them (`Session.write_raw`), so an Esc
the recorder pressed is seen as one. What the session writes to the child is kept (`RecordedChild.writes`) and
otherwise ignored: the recording already holds how the CLI reacted.

Where a CLI keeps its transcript, and which options make the driver read it as it was recorded, is the driver's
own knowledge: its `replay_setup(capture, home)` hook (this module knows no CLI). A CLI whose record is a SQLite
database (`sqlite_watch.jsonl`: the rows of its append-only tables with the time each was seen) is replayed the same
way: the hook calls `capture.replay_sqlite(root)`, which creates the databases under `root` from the recorded
schema, and the rows are inserted at their times.

Runs on recorded timing, or on a virtual clock (`fast`) where timers fire in order without sleeping.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from litbridge.protocol.spec import DEFAULT_CLI
from litbridge.vclock import VirtualTimeLoop

DEFAULT_PROGRAM = DEFAULT_CLI  # a recording that names no program was made with the default CLI
"""The program of a capture whose metadata names none (an asciicast without meta.json): the first recordings."""


@dataclass
class SqliteRow:
    """One row of a watched SQLite table (`sqlite_watch.jsonl`): when it was seen, where, and its columns."""

    t: float
    db: str  # the database's path relative to the recorder's transcripts base (its HOME)
    table: str
    rowid: int
    row: dict[str, Any]


@dataclass
class Capture:
    """One recording: output chunks, typed keys, transcript lines with the time they hit the disk, metadata."""

    name: str
    chunks: list[tuple[float, bytes]]
    transcript: list[tuple[float, str, bytes]] = field(default_factory=list)  # (t, file name, line)
    keys: list[tuple[float, bytes]] = field(default_factory=list)  # the recorder's own keystrokes
    transcript_dirs: dict[str, str] = field(default_factory=dict)  # file name -> folder under transcripts/
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    sqlite: list[SqliteRow] = field(default_factory=list)  # rows of watched SQLite tables, with the time seen
    sqlite_schema: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # db -> table -> CREATE ...
    sqlite_root: Path | None = None  # where `Capture.replay_sqlite` put the databases (None: rows not played)

    @property
    def cwd(self) -> str:
        return str(self.meta.get("cwd") or "/home/dev/work/replay")

    @property
    def cli(self) -> str:
        argv = self.meta.get("argv") or [DEFAULT_PROGRAM]
        return Path(str(argv[0])).name

    @property
    def args(self) -> list[str]:
        argv = self.meta.get("argv") or []
        return [str(a) for a in argv[1:]]

    @property
    def exit_code(self) -> int | None:
        if "exit_code" in self.meta:
            return self.meta["exit_code"]
        return (self.meta.get("exit_status") or {}).get("exitstatus")  # the other recorder's meta

    @classmethod
    def load(cls, path: str | Path) -> Capture:
        p = Path(path)
        if p.is_file() and p.suffix == ".cast":
            return cls.load_cast(p)
        if not (p / "chunks.jsonl").exists():
            if (p / "session.cast").exists():
                return cls.load_cast(p / "session.cast")
            raise FileNotFoundError(f"{p} has neither chunks.jsonl nor session.cast")
        chunks = []
        for line in (p / "chunks.jsonl").read_bytes().splitlines():
            if line.strip():
                c = orjson.loads(line)
                chunks.append((float(c["t"]), base64.b64decode(c["b64"])))
        meta = orjson.loads((p / "meta.json").read_bytes()) if (p / "meta.json").exists() else {}
        cap = cls(p.name, chunks, meta=meta, path=p)
        cap._load_keys(p)
        cap._load_transcript(p)
        cap._load_sqlite(p)
        return cap

    @classmethod
    def load_cast(cls, path: Path) -> Capture:
        lines = path.read_bytes().splitlines()
        header = orjson.loads(lines[0]) if lines else {}
        chunks: list[tuple[float, bytes]] = []
        keys: list[tuple[float, bytes]] = []
        for line in lines[1:]:
            if not line.strip():
                continue
            t, kind, data = orjson.loads(line)[:3]
            if kind == "o":
                chunks.append((float(t), str(data).encode("utf-8")))
        folder = path.parent
        if (folder / "meta.json").exists():
            meta = orjson.loads((folder / "meta.json").read_bytes())
        else:
            meta = {"cwd": (header.get("env") or {}).get("PWD", "/home/dev/work/replay")}
        cap = cls(path.stem if path.name != "session.cast" else folder.name, chunks, keys=keys, meta=meta)
        cap.path = folder
        cap._load_keys(folder)
        cap._load_transcript(folder)
        cap._load_sqlite(folder)
        return cap

    def _load_keys(self, folder: Path) -> None:
        f = folder / "keys.jsonl"
        if not f.exists():
            return
        for raw in f.read_bytes().splitlines():
            if raw.strip():
                k = orjson.loads(raw)
                if not str(k.get("label", "")).startswith("auto-reply"):
                    self.keys.append((float(k["t"]), base64.b64decode(k["b64"])))

    def replay_sqlite(self, root: Path) -> list[Path]:
        """For a driver's `replay_setup`: create the watched SQLite databases under `root` (their paths as recorded,
        relative to the recorder's HOME), empty, from the recorded schema; the replay then inserts each recorded row
        at its time. Returns the databases' paths."""
        out: list[Path] = []
        for db, tables in self.sqlite_schema.items():
            path = root / db
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
                for statements in tables.values():
                    for sql in statements:
                        conn.execute(sql)
            out.append(path)
        self.sqlite_root = root
        return out

    def _load_sqlite(self, folder: Path) -> None:
        f = folder / "sqlite_watch.jsonl"
        if not f.exists():
            return
        for raw in f.read_bytes().splitlines():
            if not raw.strip():
                continue
            w = orjson.loads(raw)
            db, table = str(w["db"]), str(w["table"])
            if "schema" in w:
                self.sqlite_schema.setdefault(db, {})[table] = [str(x) for x in w["schema"]]
            elif "row" in w:
                self.sqlite.append(SqliteRow(float(w["t"]), db, table, int(w["rowid"]), dict(w["row"])))

    def _load_transcript(self, folder: Path) -> None:
        watch = folder / "transcript_watch.jsonl"
        tdir = folder / "transcripts"
        if not tdir.exists() and (folder / "resumed" / "transcripts").exists():
            # a resume capture's first run: its chat file grew on and was copied once, in resumed/
            tdir = folder / "resumed" / "transcripts"
        if not watch.exists() or not tdir.exists():
            return
        files: dict[str, list[bytes]] = {}
        for f in sorted(tdir.rglob("*.jsonl")):
            # the folders as the CLI laid them out: the driver's replay_setup reads its own layout from them
            files[f.name] = f.read_bytes().splitlines(keepends=True)
            self.transcript_dirs[f.name] = f.parent.relative_to(tdir).as_posix()
        offsets: dict[str, int] = {}
        for raw in watch.read_bytes().splitlines():
            if not raw.strip():
                continue
            w = orjson.loads(raw)
            name = Path(w["file"]).name
            lines = files.get(name, [])
            if isinstance(w.get("lines"), list) and isinstance(w.get("size"), int):
                # the watch says how big the file was after these lines: whole lines up to there, and (the first
                # time a file is seen) what it already held before the recording (a resumed chat) at t=0. A
                # trimmed copy (long lines shortened) no longer ends a line at that size: count lines instead.
                end, upto = 0, 0
                while upto < len(lines) and end + len(lines[upto]) <= w["size"]:
                    end += len(lines[upto])
                    upto += 1
                if end == w["size"]:
                    if name not in offsets:
                        offsets[name] = before = max(0, upto - len(w["lines"]))
                        self.transcript.extend((0.0, name, line) for line in lines[:before])
                    i = offsets[name]
                    self.transcript.extend((float(w["t"]), name, line) for line in lines[i:upto])
                    offsets[name] = max(i, upto)
                    continue
            i = offsets.get(name, 0)
            n = len(w["lines"]) if isinstance(w.get("lines"), list) else 1  # a watch record may list a batch
            for line in lines[i : i + n]:
                self.transcript.append((float(w["t"]), name, line))
            offsets[name] = i + n


class RecordedChild:
    """A `pty.ChildProcess` stand-in that plays a `Capture` (see the module docstring)."""

    pid = 0
    pgid = 0

    def __init__(
        self, capture: Capture, transcript_dir: Path, *, speed: float = 1.0, tail: float = 12.0
    ) -> None:
        self.capture = capture
        self.transcript_dir = transcript_dir
        self.speed = speed
        self.tail = tail
        self.exit_code: int | None = None
        self.exited = False
        self.stopping = False  # the replay's consumer asked to stop (`on_event` returned False)
        self.writes: list[tuple[float, bytes]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.t0 = 0.0
        self._on_exit: Callable[[int | None], None] = lambda c: None
        self._handles: list[asyncio.TimerHandle] = []
        self._exit_future: asyncio.Future[int | None] | None = None
        self._dbs: dict[str, sqlite3.Connection] = {}

    @property
    def alive(self) -> bool:
        return not self.exited

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        on_output: Callable[[bytes], None],
        on_exit: Callable[[int | None], None],
        on_stderr: Callable[[bytes], None] | None = None,
    ) -> None:
        self.loop, self._on_exit = loop, on_exit
        self._exit_future = loop.create_future()
        self.t0 = loop.time()
        self.transcript_dir.mkdir(parents=True, exist_ok=True)
        cap = self.capture
        # One callback per distinct time, in recorded order: the loop's timer heap is not stable for equal times.
        steps: list[tuple[float, int, Callable[[], None]]] = []
        for i, (t, data) in enumerate(cap.chunks):
            steps.append((t, i, functools.partial(on_output, data)))
        n = len(steps)
        for i, (t, name, line) in enumerate(cap.transcript):
            steps.append((t, n + i, functools.partial(self._append, name, line)))
        if cap.sqlite_root is not None:
            n = len(steps)
            for i, row in enumerate(cap.sqlite):
                steps.append((row.t, n + i, functools.partial(self._insert, cap.sqlite_root, row)))
        steps.sort(key=lambda s: (s[0], s[1]))
        prev = -1.0
        for t, _, fn in steps:
            when = max(t, prev + 1e-6)  # strictly increasing, so the heap keeps the order
            prev = when
            self._handles.append(loop.call_at(self.t0 + when / self.speed, fn))
        self.end_t = prev if steps else 0.0
        self._handles.append(loop.call_at(self.t0 + self.end_t / self.speed + self.tail, self._exit))

    def _append(self, name: str, line: bytes) -> None:
        with open(self.transcript_dir / name, "ab") as fh:
            fh.write(line)

    def _insert(self, root: Path, row: SqliteRow) -> None:
        """One recorded row into its table, with its rowid (a reader's cursor), committed at once."""
        conn = self._dbs.get(row.db)
        if conn is None:
            conn = self._dbs[row.db] = sqlite3.connect(root / row.db, isolation_level=None)
        names = list(row.row)
        values = [
            base64.b64decode(v["b64"]) if isinstance(v, dict) and set(v) == {"b64"} else v
            for v in row.row.values()
        ]
        cols = ", ".join(f'"{n}"' for n in ["rowid", *names])
        marks = ", ".join("?" * (len(names) + 1))
        conn.execute(f'INSERT INTO "{row.table}" ({cols}) VALUES ({marks})', [row.rowid, *values])

    def _exit(self, code: int | None = None) -> None:
        if self.exited:
            return
        self.exited = True
        for conn in self._dbs.values():
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._dbs.clear()
        self.exit_code = self.capture.exit_code if code is None else code
        for h in self._handles:
            h.cancel()
        if self._exit_future is not None and not self._exit_future.done():
            self._exit_future.set_result(self.exit_code)
        self._on_exit(self.exit_code)

    def write(self, data: bytes) -> None:
        if not self.exited and self.loop is not None:
            self.writes.append((self.loop.time() - self.t0, data))

    def close_stdin(self) -> None:
        pass

    async def wait(self) -> int | None:
        assert self._exit_future is not None
        return await asyncio.shield(self._exit_future)

    def end_now(self) -> None:
        """End as a killed CLI would (`kill`, or the replay's consumer stopped reading)."""
        self._exit(-15)

    async def kill(self, grace: float = 2.0) -> int | None:
        self.end_now()
        return self.exit_code


async def _replay(
    capture: Capture, home: Path, emit: Callable[[dict], bool | None], *, tail: float, speed: float
) -> tuple[Any, RecordedChild]:
    from litbridge.drivers import get_driver
    from litbridge.session import Session

    loop = asyncio.get_running_loop()
    # the driver knows where its CLI keeps its transcript; a driver without the hook reads none
    setup = getattr(get_driver(capture.cli), "replay_setup", None) or _plain_setup
    extra, tdir = setup(capture, home)
    child = RecordedChild(capture, tdir, speed=speed, tail=tail)
    options: dict[str, Any] = {
        "session": capture.name,
        "cli": capture.cli,
        "args": list(capture.args),
        "working_dir": capture.cwd,
        **extra,
    }
    done: asyncio.Future[None] = loop.create_future()
    t0 = loop.time()

    def stamp(ev: dict) -> None:
        if emit({**ev, "t": round((loop.time() - t0) * speed, 3)}) is False and not child.stopping:
            child.stopping = (
                True  # the consumer is done: the recorded CLI ends as if killed, the session with it
            )
            loop.call_soon(child.end_now)

    def on_dead(_session: Any) -> None:
        if not done.done():
            done.set_result(None)

    session = Session(
        capture.name, options, stamp, loop=loop, on_dead=on_dead, child_factory=lambda *a: child
    )
    session.spawn()
    for t, data in capture.keys:
        loop.call_at(child.t0 + t / speed, session.write_raw, data)
    session.start()
    await done
    return session, child


def _plain_setup(capture: Capture, home: Path) -> tuple[dict[str, Any], Path]:
    """For a driver without `replay_setup`: a private HOME; recorded transcript lines land under it unread."""
    return {"env": {"HOME": str(home)}}, home / "transcripts"


def replay(
    capture: Capture | str | Path,
    *,
    fast: bool = True,
    speed: float = 1.0,
    tail: float = 12.0,
    on_event: Callable[[dict], bool | None] | None = None,
) -> list[dict]:
    """Run `capture` through a real `Session`; returns (and streams to `on_event`) the events it emits, each
    with `t` = recording seconds since spawn. `on_event` returning False stops the replay early (its reader has
    gone): the recorded CLI ends as if killed and the session shuts down as it would in the daemon."""
    cap = capture if isinstance(capture, Capture) else Capture.load(capture)
    events: list[dict] = []

    def emit(ev: dict) -> bool | None:
        events.append(ev)
        return on_event(ev) if on_event is not None else None

    home = Path(tempfile.mkdtemp(prefix="litbridge-replay-"))
    loop: asyncio.AbstractEventLoop = VirtualTimeLoop() if fast else asyncio.new_event_loop()
    try:
        loop.run_until_complete(_replay(cap, home, emit, tail=tail, speed=1.0 if fast else speed))
    finally:
        loop.close()
        shutil.rmtree(home, ignore_errors=True)
    return events
