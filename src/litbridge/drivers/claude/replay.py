"""Replay a recorded Claude Code session through the real driver and collect the events the daemon would emit.

Reads the captures' format (`chunks.jsonl` + `transcript_watch.jsonl` + `transcripts/`, or an asciicast v2
`.cast`), feeds bytes into a `Terminal`, grows the transcript file in a temporary config dir at the recorded
times, and runs `ClaudeDriver` against a recording host, on recorded timing or on a virtual clock (`fast`).
The driver's writes go nowhere: the recording already contains what the CLI was sent.
"""

from __future__ import annotations

import asyncio
import base64
import re
import selectors
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from litbridge.drivers.base import DriverError
from litbridge.drivers.claude.driver import ClaudeDriver
from litbridge.drivers.claude.transcript import project_slug
from litbridge.term import Terminal

OSC7501_RE = re.compile(rb"\x1b\]7501;([^\x07\x1b]*)(?:\x07|\x1b\\)")


# ---------------------------------------------------------------------------------------------- capture


@dataclass
class Capture:
    """One recording: output chunks, transcript lines with the time they hit the disk, and metadata."""

    name: str
    chunks: list[tuple[float, bytes]]
    transcript: list[tuple[float, str, bytes]] = field(default_factory=list)  # (t, file name, line)
    slug: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def cwd(self) -> str:
        return str(self.meta.get("cwd") or "/home/dev/work/replay")

    @property
    def args(self) -> list[str]:
        argv = self.meta.get("argv") or []
        return [str(a) for a in argv[1:]]

    @property
    def exit_code(self) -> int | None:
        return self.meta.get("exit_code")

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
        cap._load_transcript(p)
        return cap

    @classmethod
    def load_cast(cls, path: Path) -> Capture:
        lines = path.read_bytes().splitlines()
        header = orjson.loads(lines[0]) if lines else {}
        chunks = []
        for line in lines[1:]:
            if not line.strip():
                continue
            t, kind, data = orjson.loads(line)[:3]
            if kind == "o":
                chunks.append((float(t), str(data).encode("utf-8")))
        meta: dict[str, Any] = {}
        folder = path.parent
        if (folder / "meta.json").exists():
            meta = orjson.loads((folder / "meta.json").read_bytes())
        else:
            meta = {"cwd": (header.get("env") or {}).get("PWD", "/home/dev/work/replay")}
        cap = cls(path.stem if path.name != "session.cast" else folder.name, chunks, meta=meta, path=folder)
        cap._load_transcript(folder)
        return cap

    def _load_transcript(self, folder: Path) -> None:
        watch = folder / "transcript_watch.jsonl"
        tdir = folder / "transcripts"
        if not watch.exists() or not tdir.exists():
            return
        files: dict[str, list[bytes]] = {}
        for f in tdir.glob("*/*.jsonl"):
            files[f.name] = f.read_bytes().splitlines(keepends=True)
            self.slug = f.parent.name
        offsets: dict[str, int] = {}
        for raw in watch.read_bytes().splitlines():
            if not raw.strip():
                continue
            w = orjson.loads(raw)
            name = Path(w["file"]).name
            i = offsets.get(name, 0)
            lines = files.get(name, [])
            if i < len(lines):
                self.transcript.append((float(w["t"]), name, lines[i]))
            offsets[name] = i + 1

    @property
    def first_session_id(self) -> str | None:
        return Path(self.transcript[0][1]).stem if self.transcript else None


# ---------------------------------------------------------------------------------------------- clock


class _FastSelector(selectors.DefaultSelector):
    """A selector that, instead of sleeping, advances its loop's virtual clock by the timeout."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None):  # type: ignore[override]
        ready = super().select(0)
        if not ready and timeout:
            self.now += timeout
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer: recorded sessions replay as fast as possible."""

    def __init__(self) -> None:
        self._fast = _FastSelector()
        super().__init__(self._fast)

    def time(self) -> float:
        return self._fast.now


# ---------------------------------------------------------------------------------------------- host


def parse_osc7501(body: bytes) -> dict[str, str] | None:
    """`state=idle:app=claude-code:msg=…` -> fields (base64 values left for the driver to decode)."""
    text = body.decode("utf-8", "replace")
    if text == "?":
        return None
    out = {}
    for part in text.split(":"):
        k, sep, v = part.partition("=")
        if sep:
            out[k] = v
    return out or None


class ReplayHost:
    """A recording `DriverHost`: does what the session would do with the driver's calls, emitting events."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, terminal: Any, key: str, emit: Callable[[dict], None]
    ):
        import logging

        self.key = key
        self.terminal = terminal
        self.loop = loop
        self.log = logging.getLogger("litbridge.replay")
        self.last_output_at = 0.0
        self.spawned_at = loop.time()
        self.t0 = loop.time()  # event `t` = seconds of recording time since spawn
        self.speed = 1.0
        self.state = "starting"
        self.turn_id: str | None = None
        self.pid = None
        self.writes: list[tuple[float, bytes]] = []
        self._emit_cb = emit
        self._turns = 0
        self._questions: dict[str, bool] = {}
        self._qn = 0
        self._last_replace: str | None = None
        self._last_thinking: str | None = None

    def _emit(self, event: str, **fields: Any) -> None:
        ev = {
            "event": event,
            "session": self.key,
            **fields,
            "t": round((self.loop.time() - self.t0) * self.speed, 3),
        }
        self._emit_cb(ev)

    def write(self, data: bytes) -> None:
        self.writes.append((self.loop.time(), data))

    def call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def set_state(self, state: str) -> None:
        if state != self.state:
            self._emit("state", **{"from": self.state, "to": state})
            self.state = state

    def begin_organic_turn(self, text: str) -> str:
        """A prompt typed outside `send` (here: by the recorder) opens a turn like a dispatched send."""
        if self.turn_id is not None:
            self.turn_error("superseded by a new prompt", "cli_exited")
        self._turns += 1
        self.turn_id = f"t{self._turns}"
        self._last_replace = None
        self._emit("accepted", turn_id=self.turn_id, queued=False, prompt=text)
        return self.turn_id

    def turn_text(self, text: str) -> None:
        if self.turn_id is not None and text != self._last_replace:
            self._last_replace = text
            self._emit("replace", text=text, turn_id=self.turn_id)

    def turn_thinking(self, text: str) -> None:
        if text != self._last_thinking:
            self._last_thinking = text
            self._emit("thinking", text=text)

    def tool_use(self, tool_use_id: str, name: str, input: Any) -> None:
        if self.turn_id is not None:
            self._emit("tool_use", tool_use_id=tool_use_id, name=name, input=input, turn_id=self.turn_id)

    def tool_result(self, tool_use_id: str, content: str, is_error: bool = False) -> None:
        if self.turn_id is not None:
            self._emit(
                "tool_result",
                tool_use_id=tool_use_id,
                content=content,
                is_error=is_error,
                turn_id=self.turn_id,
            )

    def _end(self, event: str, **fields: Any) -> None:
        if self.turn_id is None:
            return
        tid, self.turn_id = self.turn_id, None
        for qid, is_open in list(self._questions.items()):
            if is_open:
                self.close_question(qid, "orphaned")
        self._emit(event, turn_id=tid, **fields)

    def turn_complete(
        self, content: str, usage: dict[str, int] | None = None, source: str = "screen"
    ) -> None:
        fields: dict[str, Any] = {"content": content, "source": source}
        if usage:
            fields["usage"] = usage
        self._end("complete", **fields)

    def turn_interrupted(self, content: str = "") -> None:
        self._end("interrupted", content=content)

    def turn_error(self, message: str, kind: str = "api_error") -> None:
        self._end("turn_error", message=message, kind=kind)

    def open_question(
        self,
        kind: str,
        text: str,
        options: list[dict[str, Any]],
        detail: Any = None,
        source: str | None = None,
    ) -> str:
        self._qn += 1
        qid = f"q{self._qn}"
        self._questions[qid] = True
        self._emit(
            "question",
            question_id=qid,
            kind=kind,
            text=text,
            options=options,
            detail=detail,
            source=source or "cli-dialog",
        )
        return qid

    def close_question(self, question_id: str, reason: str = "answered") -> None:
        if self._questions.get(question_id):
            self._questions[question_id] = False
            self._emit("question_closed", question_id=question_id, reason=reason)

    def open_questions(self) -> list[str]:
        return [q for q, is_open in self._questions.items() if is_open]

    def input_ready(self) -> None:
        pass

    def emit(self, event: str, **fields: Any) -> None:
        self._emit(event, **fields)


# ---------------------------------------------------------------------------------------------- replay


async def _replay(
    capture: Capture, home: Path, emit: Callable[[dict], None], *, tail: float, speed: float
) -> ReplayHost:
    loop = asyncio.get_running_loop()
    osc_from_bytes = getattr(Terminal, "implementation", "") == "pyte"
    holder: dict[str, Any] = {}

    def on_status(fields: dict) -> None:
        drv = holder.get("driver")
        if drv is not None and not osc_from_bytes:
            drv.on_status(fields)

    term = Terminal(200, 50, on_reply=lambda b: None, on_status=on_status)
    host = ReplayHost(loop, term, capture.name, emit)
    cfg = home / ".claude"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(cfg)}
    args = list(capture.args)
    sid = capture.first_session_id
    if (
        sid
        and "--session-id" not in args
        and not any(a in ("--resume", "-r", "--continue", "-c") for a in args)
    ):
        args += ["--session-id", sid]
    options = {"session": capture.name, "cli": "claude", "args": args, "working_dir": capture.cwd, "env": env}
    driver = ClaudeDriver(host, options)
    holder["driver"] = driver
    driver.launch()
    slug = capture.slug or project_slug(capture.cwd)
    tdir = cfg / "projects" / slug
    tdir.mkdir(parents=True, exist_ok=True)
    if driver.tailer is not None:
        driver.tailer.directory = tdir
    t0 = host.t0 = loop.time()
    host.speed = speed
    done = loop.create_future()
    osc_buf = b""

    def feed(data: bytes) -> None:
        nonlocal osc_buf
        host.last_output_at = loop.time()
        term.feed(data)
        if osc_from_bytes:
            osc_buf += data
            end = 0
            for m in OSC7501_RE.finditer(osc_buf):
                end = m.end()
                fields = parse_osc7501(m.group(1))
                if fields:
                    driver.on_status(fields)
            osc_buf = osc_buf[end:][-256:]
        driver.on_output(data)
        changed = term.changed_rows()
        if changed:
            driver.on_screen(changed)

    def append(name: str, line: bytes) -> None:
        with open(tdir / name, "ab") as fh:
            fh.write(line)

    # One callback per distinct time, in recorded order: the loop's timer heap is not stable for equal times.
    steps: list[tuple[float, int, Callable[[], None]]] = []
    for i, (t, data) in enumerate(capture.chunks):
        steps.append((t, i, lambda data=data: feed(data)))
    for i, (t, name, line) in enumerate(capture.transcript):
        steps.append((t, len(capture.chunks) + i, lambda name=name, line=line: append(name, line)))
    steps.sort(key=lambda s: (s[0], s[1]))
    groups: list[tuple[float, list[Callable[[], None]]]] = []
    for t, _, fn in steps:
        if groups and groups[-1][0] == t:
            groups[-1][1].append(fn)
        else:
            groups.append((t, [fn]))
    prev = -1.0
    for t, fns in groups:
        when = max(t, prev + 1e-6)  # strictly increasing, so the heap keeps the order
        prev = when
        loop.call_at(t0 + when / speed, lambda fns=fns: [fn() for fn in fns])
    last_t = groups[-1][0] if groups else 0.0

    async def run_startup() -> None:
        try:
            info = await driver.startup()
        except DriverError as exc:
            host.emit("error", code=exc.code, message=exc.message)
            return
        host.emit("ready", state="starting", model=info.get("model"), resumed=bool(info.get("resumed")))

    startup = loop.create_task(run_startup())
    loop.call_at(t0 + last_t / speed + tail, lambda: done.done() or done.set_result(None))
    await done
    if not startup.done():
        startup.cancel()
        try:
            await startup
        except asyncio.CancelledError:
            pass
    driver.on_exit(capture.exit_code)
    if host.turn_id is not None:
        host.turn_error("the CLI exited", "cli_exited")
    for qid in host.open_questions():
        host.close_question(qid, "orphaned")
    host.set_state("dead")
    host.emit("exited", exit_code=capture.exit_code, stderr_tail="")
    return host


def replay(
    capture: Capture | str | Path,
    *,
    fast: bool = True,
    speed: float = 1.0,
    tail: float = 12.0,
    on_event: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Run `capture` through the driver; returns (and streams to `on_event`) the emitted events."""
    cap = capture if isinstance(capture, Capture) else Capture.load(capture)
    events: list[dict] = []

    def emit(ev: dict) -> None:
        events.append(ev)
        if on_event is not None:
            on_event(ev)

    home = Path(tempfile.mkdtemp(prefix="litbridge-replay-"))
    loop: asyncio.AbstractEventLoop = VirtualTimeLoop() if fast else asyncio.new_event_loop()
    try:
        loop.run_until_complete(_replay(cap, home, emit, tail=tail, speed=speed if not fast else 1.0))
    finally:
        loop.close()
        shutil.rmtree(home, ignore_errors=True)
    return events
