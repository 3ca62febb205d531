"""`litbridge send SESSION TEXT`: send one message and stream the answer live in the terminal.

The response text is redrawn in place as `replace` events arrive (the whole text so far; the client gets
only what is new on the wire and says so in `delta`, which is written as it is when it continues the shown
text); state, thinking and tool lines go to stderr. Also home of the turn renderer `chat` reuses. Knows
nothing about how the daemon produces the events.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import shutil
import signal
import sys
import threading
from typing import Any, TextIO

import orjson
from wcwidth import wcswidth

from litbridge.cli import common
from litbridge.client import Client, Event, LitbridgeError, Turn

_SPINNER_TAIL = re.compile(r"\s*(\(.*\)|\d+%|[▏▎▍▌▋▊▉█░▒▓ ]+)*\s*$")


class LiveText:
    """The response on stdout, rewritten in place on a terminal.

    On a TTY, growing text is appended and any other change erases the previous text (cursor up + clear
    to end of screen) and writes the new one. Elsewhere (a pipe or a file) only the final text is written.
    Status lines for stderr go through `note()`, which lifts them above the live text when both streams
    are the same terminal.
    """

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, live: bool | None = None
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.live = self.out.isatty() if live is None else live
        self.shared = self.live and self.err.isatty()
        self.shown = ""
        self._held = ""

    def _columns(self) -> int:
        return max(shutil.get_terminal_size((80, 24)).columns, 10)

    def _rows_above_cursor(self, text: str) -> int:
        cols = self._columns()
        rows = 0
        for line in text.split("\n"):
            w = wcswidth(line.expandtabs(8))
            w = len(line) if w < 0 else w
            rows += max(1, -(-w // cols))
        return rows - 1

    def _erase(self) -> bool:
        """Erase the shown text; False when it is taller than the screen (it cannot be reached)."""
        up = self._rows_above_cursor(self.shown)
        if up >= shutil.get_terminal_size((80, 24)).lines - 1:
            self.out.write("\n")
            self.shown = ""
            return False
        self.out.write(f"\x1b[{up}F" if up else "\r")
        self.out.write("\x1b[J")
        self.shown = ""
        return True

    def extend(self, offset: int, piece: str, text: str) -> None:
        """`text` is the shown text's first `offset` characters + `piece`: when nothing shown is cut, only
        the piece is written (no compare of the whole text); else `update`."""
        if self.live and offset == len(self.shown):
            if piece:
                self.out.write(piece)
                self.shown = text
                self.out.flush()
            return
        self.update(text)

    def update(self, text: str) -> None:
        if not self.live or text == self.shown:
            return
        if self.shown and text.startswith(self.shown):
            self.out.write(text[len(self.shown) :])
        else:
            if self.shown:
                self._erase()
            self.out.write(text)
        self.shown = text
        self.out.flush()

    def note(self, line: str) -> None:
        """A status line on stderr, kept above the live text."""
        if self.shared and self.shown:
            text = self.shown
            self._erase()
            self.out.flush()
            self.err.write(line + "\n")
            self.err.flush()
            self.out.write(text)
            self.shown = text
            self.out.flush()
        else:
            self.err.write(line + "\n")
            self.err.flush()

    def prompt(self, text: str) -> None:
        """Ask on stderr below the notes: the live text steps aside until `resume()`."""
        if self.shared and self.shown:
            self._held = self.shown
            self._erase()
            self.out.flush()
        self.err.write(text)
        self.err.flush()

    def resume(self) -> None:
        """After a prompt (the user's Enter ended its line): show the live text again."""
        held, self._held = self._held, ""
        if held and not self.shown:
            self.out.write(held)
            self.shown = held
            self.out.flush()

    def finish(self, text: str) -> None:
        """Show the authoritative final text and end the line."""
        if self.live:
            self.update(text)
            if self.shown and not self.shown.endswith("\n"):
                self.out.write("\n")
        else:
            self.out.write(text if text.endswith("\n") or not text else text + "\n")
        self.out.flush()
        self.shown = ""


class StdinLines:
    """stdin lines delivered to the event loop by one reader thread (so prompts never block the loop)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread = threading.Thread(target=self._run, name="litbridge-stdin", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                line = sys.stdin.readline()
            except (OSError, ValueError):
                line = ""
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\n") if line else None)
            except RuntimeError:  # the loop is closed: the command is over
                return
            if not line:
                return

    async def get(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        return await self._queue.get()

    def drain(self) -> None:
        """Forget lines typed while nobody was asking."""
        while not self._queue.empty():
            if self._queue.get_nowait() is None:
                self._queue.put_nowait(None)
                return


def _short(value: Any, limit: int = 100) -> str:
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "question", "description", "prompt"):
            if isinstance(value.get(key), str):
                value = value[key]
                break
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _thinking_gist(text: str) -> str:
    """A spinner line without its glyph, counters and progress: `✢ Doing… (3s · ↓ 1k tokens)` -> `Doing…`."""
    return re.sub(r"^\W+", "", _SPINNER_TAIL.sub("", text)).strip()


def question_lines(ev: Event) -> list[str]:
    """A question as text: its prompt and numbered options."""
    kind = ev.get("kind") or "question"
    out = [f"? [{kind}] {ev.get('text') or ''}".rstrip()]
    detail = ev.get("detail")
    if detail:
        out.append(f"  {_short(detail, 300)}")
    for opt in ev.get("options") or []:
        mark = "›" if opt.get("selected") else " "
        out.append(f" {mark} {opt.get('digit', '?')}. {opt.get('label', '')}")
    return out


def answer_fields(ev: Event, reply: str) -> dict[str, Any] | None:
    """What to send for the user's reply to question `ev`: digit, option label or free text (None = skip)."""
    reply = reply.strip()
    if not reply:
        return None
    options = ev.get("options") or []
    for opt in options:
        if reply == str(opt.get("digit")):
            return {"digit": reply}
    for opt in options:
        if reply.casefold() == str(opt.get("label", "")).casefold():
            return {"option": opt.get("label")}
    if reply.isdigit() and len(reply) == 1 and options:
        return {"digit": reply}
    return {"text": reply}


class TurnPrinter:
    """Renders one turn's events: text live on stdout, everything else as lines on stderr."""

    def __init__(self, live: LiveText, *, json_mode: bool = False) -> None:
        self.live = live
        self.json_mode = json_mode
        self._last_thinking = ""

    def show(self, ev: Event) -> None:
        if self.json_mode:
            common.print_json(ev)
            return
        kind = ev.get("event")
        if kind == "accepted":
            if ev.get("queued"):
                self.live.note("· queued (waiting for the running turn or for the CLI's input)")
        elif kind == "state":
            self.live.note(f"· {ev.get('from')} → {ev.get('to')}")
        elif kind == "thinking":
            text = str(ev.get("text") or "").strip()
            gist = _thinking_gist(text)
            if gist and gist != self._last_thinking:  # not one line per spinner frame or token count
                self._last_thinking = gist
                self.live.note(f"· {text}")
        elif kind == "replace":
            text, delta = str(ev.get("text") or ""), ev.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("offset"), int):
                self.live.extend(delta["offset"], str(delta.get("text") or ""), text)
            else:
                self.live.update(text)
        elif kind == "tool_use":
            self.live.note(f"⏺ {ev.get('name')}({_short(ev.get('input'))})")
        elif kind == "tool_result":
            first = _short(ev.get("content") or "", 100)
            self.live.note(f"  ⎿ {'error: ' if ev.get('is_error') else ''}{first}")
        elif kind == "question":
            for line in question_lines(ev):
                self.live.note(line)
        elif kind == "question_closed":
            self.live.note(f"· question {ev.get('reason')}")
        elif kind in ("dialog_blocked", "unknown_dialog"):
            self.live.note(f"· {kind.replace('_', ' ')}: {_short(ev.get('dialog') or '', 200)}")
        elif kind == "startup_hold":
            self.live.note("· held until the CLI's input is live")
        elif kind == "complete":
            self.live.finish(str(ev.get("content") or ""))
            code = ev.get("exit_code")
            if isinstance(code, int) and code != 0:  # a shell command failed: say so, even with no output
                self.live.note(f"· {common.describe_exit(code)}")
        elif kind == "interrupted":
            self.live.finish(str(ev.get("content") or ""))
            self.live.note("· interrupted")
        elif kind == "turn_error":
            if self.live.shown:
                self.live.finish(self.live.shown)
            self.live.note(f"litbridge: turn failed: {ev.get('message')} [{ev.get('kind')}]")
        elif kind == "exited":
            self.live.note(f"· the CLI exited ({common.describe_exit(ev.get('exit_code'))})")


def exit_code_for(terminal: Event | None) -> int:
    """`send`'s exit status for the turn's terminal event; a shell command's own non-zero status when the
    turn completed with one (`complete.exit_code`, generic driver), 1 when that status does not fit."""
    if terminal is None:
        return common.EXIT_ERROR
    kind = terminal.get("event")
    if kind == "complete":
        code = terminal.get("exit_code")
        if isinstance(code, int) and code != 0:
            return code if 0 < code < 256 else common.EXIT_ERROR
        return common.EXIT_OK
    if kind == "interrupted":
        return common.EXIT_INTERRUPTED
    return common.EXIT_TURN_ERROR


async def stream_turn(
    client: Client,
    turn: Turn,
    printer: TurnPrinter,
    *,
    stdin: StdinLines | None = None,
    ctrl_c: asyncio.Event | None = None,
) -> Event | None:
    """Render `turn` until its terminal event; answers questions from `stdin` when given.

    A Ctrl-C (signalled through `ctrl_c`) interrupts the turn once; the turn then ends with `interrupted`.
    """
    name, _, channel = turn.session.partition(":")
    channel_id = channel or None
    interrupted = False
    asked = False
    iterator = turn.__aiter__()
    while True:
        next_ev = asyncio.ensure_future(iterator.__anext__())
        waits: set[asyncio.Future[Any]] = {next_ev}
        ctrl_wait = asyncio.ensure_future(ctrl_c.wait()) if ctrl_c is not None and not interrupted else None
        if ctrl_wait is not None:
            waits.add(ctrl_wait)
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if ctrl_wait is not None and ctrl_wait in done:
            interrupted = True
            printer.live.note("· interrupting (Ctrl-C again to quit)")
            with contextlib.suppress(LitbridgeError):
                await client.interrupt(name, channel_id=channel_id)
        elif ctrl_wait is not None:
            ctrl_wait.cancel()
        try:
            ev = await next_ev
        except StopAsyncIteration:
            return turn.terminal
        printer.show(ev)
        if ev.get("event") == "question":
            asked = True
        if ev.get("event") == "dialog_blocked" and not printer.json_mode:
            if not asked:  # the question came before this client connected: show the CLI's screen instead
                for line in await _screen_tail(client, name, channel_id):
                    printer.live.note(f"  │ {line}")
            printer.live.note(held_hint(turn, stdin is not None and asked))
        if ev.get("event") == "question" and stdin is not None and not printer.json_mode:
            await _ask(client, turn, ev, stdin, printer)


async def _screen_tail(client: Client, name: str, channel_id: str | None, rows: int = 14) -> list[str]:
    """The last non-blank rows of the session's screen (where a CLI draws its dialog), or [] if unavailable."""
    try:
        dump = await client.dump(name, channel_id=channel_id)
    except LitbridgeError:
        return []
    lines = [r.rstrip() for r in str(dump.get("capture") or "").split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return [r for r in lines[-rows:] if r.strip()]


def held_hint(turn: Turn, inline: bool) -> str:
    """How to let a held send through: answer what the CLI asks (the daemon gives up on it after a while)."""
    name, _, channel = turn.session.partition(":")
    how = f"litbridge answer {name} --digit N" + (f" --channel {channel}" if channel else "")
    where = "answer below, or run" if inline else "answer it with"
    return (
        f"· the message waits until the CLI's question is answered: {where} `{how}`; "
        "a send still held after 120 s fails (exit status 3)"
    )


async def _ask(client: Client, turn: Turn, ev: Event, stdin: StdinLines, printer: TurnPrinter) -> None:
    """Prompt for an answer, unless the question is closed first (answered elsewhere, turn over)."""
    name, _, channel = turn.session.partition(":")
    printer.live.note("  answer with a digit, an option label or text (empty line = leave it open):")
    printer.live.prompt("answer> ")
    reply_task = asyncio.ensure_future(stdin.get())
    closed_task = asyncio.ensure_future(_question_closed(turn, ev.get("question_id")))
    done, _ = await asyncio.wait({reply_task, closed_task}, return_when=asyncio.FIRST_COMPLETED)
    if reply_task not in done:
        reply_task.cancel()  # Queue.get() cancels without losing a line
        sys.stderr.write("\n")
        printer.live.resume()
        return
    closed_task.cancel()
    printer.live.resume()
    fields = answer_fields(ev, reply_task.result() or "")
    if fields is None:
        return
    try:
        await client.answer(name, question_id=ev.get("question_id"), channel_id=channel or None, **fields)
    except LitbridgeError as exc:
        printer.live.note(f"litbridge: answer failed: {exc.message} [{exc.code}]")


async def _question_closed(turn: Turn, question_id: Any) -> None:
    """Returns once `question_id` is closed or the turn has ended."""
    async for ev in turn:
        if ev.get("event") == "question_closed" and ev.get("question_id") == question_id:
            return
    return


class CtrlC:
    """SIGINT policy for streaming commands: while armed, the first Ctrl-C sets `event` (interrupt the turn);
    any other Ctrl-C cancels the main task (quit, exit status 130)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        self.event = asyncio.Event()
        self.armed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):
            self._loop.add_signal_handler(signal.SIGINT, self._on_sigint)

    def arm(self) -> asyncio.Event:
        self.event = asyncio.Event()
        self.armed = True
        return self.event

    def disarm(self) -> None:
        self.armed = False

    def _on_sigint(self) -> None:
        if self.armed and not self.event.is_set():
            self.event.set()
        elif self._main is not None:
            self._main.cancel()


async def _main(args: argparse.Namespace) -> int:
    text = args.text
    if text == "-":
        text = sys.stdin.read().rstrip("\n")  # the newline ending the piped text is not part of the message
    async with common.connect_any(args) as (client, session):
        turn = await client.send(session, text, channel_id=args.channel_id, msg_id=args.msg_id)
        stdin = StdinLines() if (sys.stdin.isatty() and args.text != "-" and not args.no_answer) else None
        ctrl = CtrlC()
        ctrl_c = ctrl.arm()
        printer = TurnPrinter(LiveText(), json_mode=args.json)
        try:
            terminal = await stream_turn(client, turn, printer, stdin=stdin, ctrl_c=ctrl_c)
        except asyncio.CancelledError:
            return common.EXIT_CTRL_C
        if ctrl_c.is_set() and terminal is not None and terminal.get("event") == "interrupted":
            return common.EXIT_CTRL_C
        return exit_code_for(terminal)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "send",
        help="send a message and stream the answer",
        description="Send TEXT to SESSION as one turn and stream the response live. Exit status: 0 complete, "
        "3 turn_error, 4 interrupted, 1 no daemon / command error, 130 Ctrl-C (the first Ctrl-C interrupts "
        "the turn); when the session is a shell (shell integration reports each command's status) and the "
        "command failed, its own exit status (1-255, also shown on stderr), as if it had run here. Questions "
        "the CLI asks are answered inline when stdin is a terminal.",
    )
    common.add_session_arg(p, fleet=True)
    p.add_argument("text", metavar="TEXT", help='the message ("-" reads it from stdin)')
    p.add_argument(
        "--id", dest="msg_id", metavar="ID", help="message id: a repeated id is not delivered twice"
    )
    p.add_argument("--no-answer", action="store_true", help="never prompt for answers to questions")
    common.add_connection_args(p, json_help="print the turn's raw events as JSON lines")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))


__all__ = [
    "CtrlC",
    "LiveText",
    "StdinLines",
    "TurnPrinter",
    "add_parser",
    "answer_fields",
    "exit_code_for",
    "stream_turn",
]
