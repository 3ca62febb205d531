"""Fake CLI for benchmarks: replays a real Claude capture's PTY output (and transcript) at recorded speed.

Replay mode (`--capture DIR`): writes `chunks.jsonl` to stdout at the recorded times (x `--speed`), pausing at
each recorded prompt until a carriage return arrives on stdin (the daemon's submit), then plays the typed echo
at once and the answer on the recorded clock; appends the capture's transcript lines to
`$CLAUDE_CONFIG_DIR|$HOME/.claude/projects/<slug(cwd)>/<--session-id>.jsonl` at their recorded times, each batch
the recording saw land together in one write, as Claude Code writes them; stops
(and stays alive, idle) at the first recorded key that is not a plain prompt (dialog answers, Ctrl-C...).
Tick mode (`--ticks N`): a REPL whose every answer is N lines `tick <i> <monotonic>` written `--interval` apart.
Every write is logged with its CLOCK_MONOTONIC time to `--log` (JSON lines), which other processes on the same
host can compare with their own time.monotonic(). Standard library only (it runs under `python -S`), and only
the modules it needs at run time: a benchmark starts a thousand of these, and `argparse`, `pathlib` and
`typing` were most of a start's CPU (its own option parsing below; `os.path`; types for checkers only).
"""

from __future__ import annotations

import binascii
import json
import os
import select
import signal
import sys
import termios
import time
import tty

TYPE_CHECKING = False  # not `typing`'s: importing `typing` costs more than the rest of a start
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any

# ---------------------------------------------------------------------------------------------- capture


def _slug(cwd: str) -> str:
    """Claude's project slug for short ASCII paths (every non-alphanumeric character -> "-")."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def load_timeline(
    capture: str | PathLike[str],
) -> tuple[list[tuple[float, str, bytes, str]], list[dict[str, Any]], str | None]:
    """(events sorted by recorded time: (t, "out"|"jsonl:<file>", bytes, tag), a batch of transcript lines one event
    (`_batches`), prompt gates, first session id)."""
    capture = os.fspath(capture)
    events: list[tuple[float, str, bytes, str]] = []
    for raw in _read(os.path.join(capture, "chunks.jsonl")).splitlines():
        if raw.strip():
            c = json.loads(raw)
            events.append((float(c["t"]), "out", binascii.a2b_base64(c["b64"]), ""))
    first_sid: str | None = None
    watch, tdir = os.path.join(capture, "transcript_watch.jsonl"), os.path.join(capture, "transcripts")
    if os.path.exists(watch) and os.path.isdir(tdir):
        files = {
            name: _read(os.path.join(tdir, sub, name)).splitlines(keepends=True)
            for sub in os.listdir(tdir)
            if os.path.isdir(os.path.join(tdir, sub))
            for name in os.listdir(os.path.join(tdir, sub))
            if name.endswith(".jsonl")
        }
        offsets: dict[str, int] = {}
        for raw in _read(watch).splitlines():
            if not raw.strip():
                continue
            w = json.loads(raw)
            name = os.path.basename(w["file"])
            first_sid = first_sid or name[: -len(".jsonl")]
            i = offsets.get(name, 0)
            lines = files.get(name, [])
            if i < len(lines):
                s = w.get("summary") or {}
                tag = (
                    "end_turn"
                    if s.get("stop_reason") == "end_turn"
                    else ("turn_duration" if s.get("subtype") == "turn_duration" else "")
                )
                events.append((float(w["t"]), "jsonl:" + name, lines[i], tag))
            offsets[name] = i + 1
    events.sort(key=lambda e: e[0])  # stable: recorded order kept for equal times
    return _batches(events), _gates(capture), first_sid


def _batches(
    events: list[tuple[float, str, bytes, str]],
) -> list[tuple[float, str, bytes, str]]:
    """Transcript lines the recording saw land together (one recorded time, one file, back to back) as one
    write, their tags joined by ",": Claude Code writes its transcript in batches (a turn's `end_turn` line and
    its `turn_duration` in the same flush), so a reader never sees one without the other, however long the
    writer is kept from the CPU."""
    out: list[tuple[float, str, bytes, str]] = []
    for ev in events:
        last = out[-1] if out else None
        if last is not None and ev[1].startswith("jsonl:") and last[1] == ev[1] and last[0] == ev[0]:
            out[-1] = (last[0], last[1], last[2] + ev[2], last[3] + "," + ev[3])
        else:
            out.append(ev)
    return out


def _gates(capture: str) -> list[dict[str, Any]]:
    """Recorded prompts: [{start, submit, text}] up to the first key that is not a plain typed prompt; the
    last entry may be {start, hold: True} (the replay stops there)."""
    gates: list[dict[str, Any]] = []
    seg: list[dict[str, Any]] = []
    path = os.path.join(capture, "keys.jsonl")
    if not os.path.exists(path):
        return gates
    for raw in _read(path).splitlines():
        if not raw.strip():
            continue
        k = json.loads(raw)
        label = str(k.get("label", ""))
        if label.startswith("auto-reply"):
            continue
        if label.startswith("prompt:"):
            seg.append(k)
            continue
        if label == "enter (submit)" and seg:
            text = b"".join(binascii.a2b_base64(x["b64"]) for x in seg).decode("utf-8", "replace")
            gates.append({"start": float(seg[0]["t"]), "submit": float(k["t"]), "text": text})
            seg = []
            continue
        gates.append({"start": float(seg[0]["t"] if seg else k["t"]), "hold": True})
        return gates
    return gates


# ---------------------------------------------------------------------------------------------- player


class Player:
    """Writes stdout / transcript lines and logs each write with its monotonic time."""

    def __init__(
        self, log_path: str | None, transcript: str | PathLike[str] | None, sid_map: dict[str, str]
    ) -> None:
        self.log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if log_path else None
        self.transcript = transcript
        self.sid_map = sid_map
        self.stdin_buf = b""

    def log(self, **fields: Any) -> None:
        if self.log_fd is not None:
            os.write(self.log_fd, (json.dumps(fields) + "\n").encode())

    def out(self, data: bytes, t: float = -1.0, tag: str = "") -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(1, view)
            except BlockingIOError:
                select.select([], [1], [], 1.0)
                continue
            view = view[n:]
        self.log(m=time.monotonic(), k="out", t=t, n=len(data), tag=tag)

    def jsonl(self, name: str, lines: bytes, t: float, tags: str) -> None:
        """One batch of transcript lines in one write; each line logged (`tags`: theirs, joined by ",")."""
        if self.transcript is None:
            return
        stem = name[: -len(".jsonl")]
        target = os.path.join(self.transcript, self.sid_map.get(stem, stem) + ".jsonl")
        for old, new in self.sid_map.items():
            lines = lines.replace(old.encode(), new.encode())
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, lines)
        finally:
            os.close(fd)
        m = time.monotonic()
        for tag in tags.split(","):
            self.log(m=m, k="jsonl", t=t, tag=tag)

    def wait_input(self, timeout: float | None) -> bytes:
        """Read stdin for up to `timeout` s (None: until something arrives). b"" on timeout; EOF exits."""
        r, _, _ = select.select([0], [], [], timeout)
        if not r:
            return b""
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            raise SystemExit(0)
        return data

    def sleep_until(self, deadline: float) -> None:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.stdin_buf += self.wait_input(left)  # terminal replies etc.; a CR here is kept for a gate
            self.stdin_buf = self.stdin_buf[-256:]

    def wait_cr(self) -> None:
        while b"\r" not in self.stdin_buf:
            self.stdin_buf += self.wait_input(None)
        self.stdin_buf = b""


def replay(
    args: Options,
    player: Player,
    events: list[tuple[float, str, bytes, str]],
    gates: list[dict[str, Any]],
) -> None:
    speed = args.speed
    base = time.monotonic()  # wall time of recorded t=0 (recorded times are divided by speed)
    i = 0
    for gate in [*gates, None]:
        stop = gate["start"] if gate is not None else float("inf")
        while i < len(events) and events[i][0] < stop:
            t, kind, data, tag = events[i]
            if gate is None or b"\r" not in player.stdin_buf:  # submitted early: skip the idle wait
                player.sleep_until(base + t / speed)
            _emit(player, kind, data, t, tag)
            i += 1
        if gate is None or gate.get("hold"):
            break
        player.wait_cr()
        player.log(m=time.monotonic(), k="submit", t=gate["submit"], text=gate["text"])
        while i < len(events) and events[i][0] < gate["submit"]:  # the typed echo, at once
            t, kind, data, tag = events[i]
            _emit(player, kind, data, t, tag)
            i += 1
        base = time.monotonic() - gate["submit"] / speed
    if args.exit_at_end and gates and not gates[-1].get("hold"):
        return
    while True:  # a live, idle CLI until killed
        player.stdin_buf = player.wait_input(None)[-256:]


def _emit(player: Player, kind: str, data: bytes, t: float, tag: str) -> None:
    if kind == "out":
        player.out(data, t, tag)
    else:
        player.jsonl(kind[len("jsonl:") :], data, t, tag)


def ticks(args: Options, player: Player) -> None:
    """A REPL: each line read (CR-terminated) is answered by `--ticks` timestamped lines, then a prompt."""
    player.out(b"\x1b[?2004lTICK REPL ready\r\n$ ")
    line = b""
    turn = 0
    while True:
        data = player.wait_input(None)
        line += data
        if b"\r" not in line:
            continue
        line = b""
        turn += 1
        for k in range(args.ticks):
            if k:
                player.sleep_until(time.monotonic() + args.interval)
            prefix = "" if k else "\r\n"  # the answer starts on its own line
            m = time.monotonic()
            os.write(1, f"{prefix}tick {turn}.{k} {m:.6f}\r\n".encode())
            player.log(m=m, k="out", t=-1.0, n=0, tag=f"tick {turn}.{k}")
        player.out(b"$ ")


class Options:
    """The command line: `--capture DIR` etc. (below), `--opt value` or `--opt=value`; anything else (the flags
    a driver passes to the real CLI) is ignored. Not `argparse`: see the module docstring."""

    VALUED = {
        "--capture": ("capture", str),
        "--speed": ("speed", float),
        "--log": ("log", str),
        "--ticks": ("ticks", int),
        "--interval": ("interval", float),
        "--session-id": ("session_id", str),
    }
    FLAGS = {"--no-transcript": "no_transcript", "--exit-at-end": "exit_at_end"}

    def __init__(self, argv: list[str]) -> None:
        self.capture: str | None = os.environ.get("REPLAY_CAPTURE")  # capture folder (chunks.jsonl)
        self.speed = float(os.environ.get("REPLAY_SPEED", "1.0"))
        self.log: str | None = os.environ.get("REPLAY_LOG")  # append one JSON line per write
        self.no_transcript = False  # do not write the JSONL transcript
        self.exit_at_end = False  # exit when the recording ends (no hold)
        self.ticks = 0  # tick mode: lines per answer
        self.interval = 0.02  # tick mode: seconds between lines
        self.session_id: str | None = None  # (from the Claude driver) the transcript file's name
        i = 0
        while i < len(argv):
            opt, eq, value = argv[i].partition("=")
            i += 1
            if opt in self.FLAGS and not eq:
                setattr(self, self.FLAGS[opt], True)
            elif opt in self.VALUED:
                if not eq:
                    if i >= len(argv):
                        raise SystemExit(f"replay_cli: {opt} needs a value")
                    value, i = argv[i], i + 1
                name, convert = self.VALUED[opt]
                setattr(self, name, convert(value))


def main(argv: list[str] | None = None) -> int:
    args = Options(sys.argv[1:] if argv is None else argv)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    if os.isatty(0):
        tty.setraw(0, termios.TCSANOW)
    transcript: str | None = None
    sid_map: dict[str, str] = {}
    if args.capture and not args.no_transcript:
        cfg = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.environ.get("HOME", "/tmp"), ".claude")
        transcript = os.path.join(cfg, "projects", _slug(os.getcwd()))
        os.makedirs(transcript, exist_ok=True)
    timeline = load_timeline(args.capture) if args.capture else None
    if timeline is not None and timeline[2] and args.session_id:
        sid_map[timeline[2]] = args.session_id
    player = Player(args.log, transcript, sid_map)
    player.log(m=time.monotonic(), k="start", pid=os.getpid(), argv=sys.argv[1:])
    if args.ticks:
        ticks(args, player)
    elif timeline is not None:
        replay(args, player, timeline[0], timeline[1])
    else:
        raise SystemExit("replay_cli: --capture DIR or --ticks N is required")
    return 0


if __name__ == "__main__":
    sys.exit(main())
