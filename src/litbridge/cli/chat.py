"""`litbridge chat SESSION`: an interactive conversation with a session, questions answered inline.

Each line you type is a `send` whose answer streams live (rendering shared with `send`); lines starting
with `/` are typed as slash commands (`input`); `:`-commands control the chat itself. It does not create
the session (use `litbridge create`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from litbridge.cli import common
from litbridge.cli.send import (
    CtrlC,
    LiveText,
    StdinLines,
    TurnPrinter,
    answer_fields,
    question_lines,
    stream_turn,
)
from litbridge.client import Client, Event, LitbridgeError

HELP = """\
  text          send it as a message (the answer streams below)
  /cmd ...      type a slash command into the CLI (not observed as a turn)
  //text        send "/text" as a message
  :keys K ...   press named keys (Enter Esc Up Down Tab C-c ...)
  :interrupt    interrupt the running turn (or press Ctrl-C during a turn)
  :dump         show the session's screen
  :quit         leave (Ctrl-D works too; the session keeps running)"""


class _Questions:
    """Questions the CLI asks between turns (after a slash command or keys): shown, then the next line answers."""

    def __init__(self, client: Client, key: str, live: LiveText, json_mode: bool) -> None:
        self.open: Event | None = None
        self._live = live
        self._json = json_mode
        self._stream = client.events(key, kinds={"question", "question_closed"})
        self._task = asyncio.create_task(self._watch())
        self.paused = False

    async def _watch(self) -> None:
        with contextlib.suppress(LitbridgeError):
            async for ev in self._stream:
                if ev.get("event") == "question":
                    self.open = ev
                    if not self.paused:
                        self._show(ev)
                elif self.open is not None and ev.get("question_id") == self.open.get("question_id"):
                    self.open = None
                    if not self.paused and not self._json:
                        self._live.note(f"· question {ev.get('reason')}")

    def _show(self, ev: Event) -> None:
        if self._json:
            common.print_json(ev)
            return
        for line in question_lines(ev):
            self._live.note(line)
        self._live.note("  (your next line answers it)")

    def close(self) -> None:
        self._stream.close()
        self._task.cancel()


async def _chat(args: argparse.Namespace) -> int:
    name, channel_id = args.session, args.channel_id
    tty = sys.stdin.isatty()
    async with common.connect(args) as client:
        key = name if channel_id is None else f"{name}:{channel_id}"
        if not any(s.get("name") == key for s in await client.list()):
            common.eprint(
                f"litbridge: no session '{common.shown(key)}' — create it with "
                f"`litbridge create {common.shown(name)} --cli ...`"
            )
            return common.EXIT_ERROR
        live = LiveText()
        printer = TurnPrinter(live, json_mode=args.json)
        stdin = StdinLines()
        ctrl = CtrlC()
        questions = _Questions(client, key, live, args.json)
        if tty:
            common.eprint(f"chatting with {common.shown(key)} — :help for commands, Ctrl-D to leave")
        status = common.EXIT_OK
        try:
            while True:
                if tty:
                    sys.stderr.write("› ")
                    sys.stderr.flush()
                line = await stdin.get()
                if line is None:
                    break
                if not line.strip():
                    continue
                if questions.open is not None and not line.startswith(":"):
                    fields = answer_fields(questions.open, line)
                    if fields is not None:
                        try:
                            await client.answer(
                                name,
                                question_id=questions.open.get("question_id"),
                                channel_id=channel_id,
                                **fields,
                            )
                        except LitbridgeError as exc:
                            live.note(f"litbridge: {exc.message} [{exc.code}]")
                    continue
                if line.startswith(":"):
                    if await _meta(client, name, channel_id, line, live) == "quit":
                        break
                    continue
                try:
                    if line.startswith("/") and not line.startswith("//"):
                        await client.input(name, line, channel_id=channel_id)
                        live.note(f"· typed {line}")
                        continue
                    text = line[1:] if line.startswith("//") else line
                    turn = await client.send(name, text, channel_id=channel_id)
                    questions.paused = True
                    try:
                        terminal = await stream_turn(client, turn, printer, stdin=stdin, ctrl_c=ctrl.arm())
                    finally:
                        ctrl.disarm()
                        questions.paused = False
                        questions.open = None
                    if terminal is not None and terminal.get("event") == "turn_error":
                        status = common.EXIT_TURN_ERROR
                except LitbridgeError as exc:
                    if exc.code == "connection_lost":
                        raise
                    live.note(f"litbridge: {exc.message} [{exc.code}]")
        except asyncio.CancelledError:
            return common.EXIT_CTRL_C
        finally:
            questions.close()
        return status


async def _meta(client: Client, name: str, channel_id: str | None, line: str, live: LiveText) -> str | None:
    word, _, rest = line[1:].strip().partition(" ")
    try:
        if word in ("q", "quit", "exit"):
            return "quit"
        if word in ("h", "help", "?"):
            live.note(HELP)
        elif word == "keys":
            if not rest.split():
                live.note("usage: :keys Down Enter")
            else:
                await client.keystroke(name, rest.split(), channel_id=channel_id)
        elif word == "interrupt":
            await client.interrupt(name, channel_id=channel_id)
        elif word == "dump":
            dump = await client.dump(name, channel_id=channel_id)
            rows = [r.rstrip() for r in str(dump.get("capture") or "").split("\n")]
            while rows and not rows[-1]:
                rows.pop()
            live.note(f"· state {dump.get('state')}")
            live.note("\n".join(rows))
        else:
            live.note(f"unknown :{word} — :help lists the commands")
    except LitbridgeError as exc:
        if exc.code == "connection_lost":
            raise
        live.note(f"litbridge: {exc.message} [{exc.code}]")
    return None


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "chat",
        help="interactive conversation with a session",
        description="Talk to SESSION interactively: every line is a message whose answer streams live; the "
        "CLI's questions are answered inline. Commands:\n" + HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_session_arg(p)
    common.add_connection_args(p, json_help="print raw events as JSON lines instead of rendering them")
    p.set_defaults(func=lambda args: common.run(lambda: _chat(args)))
