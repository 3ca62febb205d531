"""The rift driver: runs `rift --serve` on pipes (no PTY), speaks its JSON-lines protocol v1 and hands each event
to `RiftMapping`; renders a readable transcript into the session's Terminal so dump and attach work.

Spawning, process groups and killing are the session's (LaunchSpec transport "pipes"); the event mapping is
`mapping.py`; the transcript formatting is `render.py`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
from collections import deque
from typing import Any

import orjson

from litbridge.drivers.base import Driver, DriverError, DriverHost, LaunchSpec
from litbridge.drivers.rift import render
from litbridge.drivers.rift.mapping import AnswerError, RiftMapping
from litbridge.protocol.framing import LineSplitter, TooLarge

STARTUP_TIMEOUT = 30.0  # model preflight plus MCP spawns can be slow
STOP_GRACE = 5.0  # after stdin EOF a cancelled turn can still run idle compaction
CANCEL_GRACE = 4.0  # kill mid-turn: cancel -> done -> session saved (the session gives stop() 10 s in all)
STDERR_TAIL = 15
MAX_EVENT_LINE = 64 * 1024 * 1024  # a `history` event of a long session is big, but never unbounded
MAX_STDERR_LINE = 64 * 1024
EXECUTABLE_ENV = "LITBRIDGE_RIFT_BIN"  # override the `rift` found on PATH (tests, non-standard installs)


def _flag(options: dict[str, Any], name: str) -> bool | None:
    value = options.get(name)
    return value if isinstance(value, bool) else None


class RiftDriver(Driver):
    """One `rift --serve` process = one conversation.

    create options understood beyond the common ones: `approve` (bool; default True = approval prompts are relayed
    as questions), `preapprove` (bool, the inverse of `approve`), `edit_review` (bool; relay write/edit proposals as
    apply/reject questions, default False), `startup_timeout` (seconds, default 30).
    """

    name = "rift"
    markdown = True

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        approve = _flag(options, "approve")
        preapprove = _flag(options, "preapprove")
        self.approve = (
            approve if approve is not None else (not preapprove if preapprove is not None else True)
        )
        self.edit_review = _flag(options, "edit_review") is True
        self.resume: str | None = options.get("resume") if isinstance(options.get("resume"), str) else None
        self._stdout = LineSplitter(MAX_EVENT_LINE)
        self._line = ""  # the key editor's line (see keys)
        self._keys_decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._stderr = LineSplitter(MAX_STDERR_LINE)
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.exit_code: int | None = None
        self._ready: asyncio.Future[dict] | None = None
        self._exited: asyncio.Event | None = None
        self.mapping = RiftMapping(
            host, self._send, self._render, schedule=self._schedule, edit_review=self.edit_review
        )

    # ---------- plumbing ----------
    def _send(self, cmd: dict) -> None:
        self.host.write(orjson.dumps(cmd) + b"\n")

    def _render(self, data: bytes) -> None:
        """Transcript text into the session's Terminal (for pipes the session tees it to attach viewers)."""
        self.host.terminal.feed(data)

    def _schedule(self, delay: float, fn: Any) -> Any:
        return self.host.call_later(delay, fn)

    @property
    def commands(self) -> list[str]:
        return list(self.mapping.meta.get("commands") or [])

    # ---------- lifecycle ----------
    def launch(self) -> LaunchSpec:
        exe = os.environ.get(EXECUTABLE_ENV) or "rift"
        argv = [exe, "--serve"]
        model = self.options.get("model")
        if isinstance(model, str) and model:
            argv += ["--model", model]
        if self.resume:
            argv += ["--resume", self.resume]
        argv += [str(a) for a in self.options.get("args") or []]
        return LaunchSpec(argv=argv, env={"RIFT_NO_UPDATE_CHECK": "1"}, transport="pipes")

    async def startup(self) -> dict[str, Any]:
        """Send `hello` at once (rift buffers it until `ready`), then wait for `ready` or an early exit."""
        loop = self.host.loop
        if self._ready is None:
            self._ready = loop.create_future()
        self._exited = self._exited or asyncio.Event()
        if self.mapping.ready is not None and not self._ready.done():
            self._ready.set_result(self.mapping.ready)
        self._send({"cmd": "hello", "edit_review": self.edit_review, "approve": self.approve})
        timeout = self.options.get("startup_timeout")
        timeout = float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else STARTUP_TIMEOUT
        try:
            ready = await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except asyncio.TimeoutError:
            raise DriverError(
                "spawn_failed", f"rift sent no `ready` within {timeout:g}s" + self._tail_suffix()
            ) from None
        return {
            "model": ready.get("model"),
            "resumed": self.resume is not None,
            "cli_version": ready.get("version"),
            "transcript_path": ready.get("session"),
        }

    def _tail_suffix(self) -> str:
        tail = self.stderr_tail_text()
        return f"; stderr: {tail}" if tail else ""

    def stderr_tail_text(self, lines: int = 4) -> str:
        return " | ".join(list(self.stderr_tail)[-lines:])

    def on_exit(self, exit_code: int | None) -> None:
        self.exit_code = exit_code
        self._drain_stderr_partial()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(
                DriverError(
                    "spawn_failed", f"rift exited (code {exit_code}) before `ready`" + self._tail_suffix()
                )
            )
            self._ready.exception()  # mark retrieved: startup() may already have given up
        self.mapping.on_exit(exit_code)
        if self._exited is not None:
            self._exited.set()

    async def stop(self, store_resume: bool) -> str | None:
        """Graceful end. A turn in flight is cancelled first and rift's `done` + session save awaited, so the open
        turn ends as `interrupted` (not as a turn_error when rift exits) and a resume keeps it; then stdin is
        closed (rift exits 0) and its exit awaited up to STOP_GRACE before the session signals the group.
        The resume token is rift's session file path from `ready`."""
        if self.exit_code is None and (self.mapping.busy or self.mapping.saving):
            await self._cancel_and_wait_saved()
        close = getattr(self.host, "close_stdin", None)
        if callable(close) and self.exit_code is None:
            self._exited = self._exited or asyncio.Event()
            close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._exited.wait(), STOP_GRACE)
        path = self.mapping.meta.get("session_path")
        return path if store_resume and isinstance(path, str) and path else None

    async def _cancel_and_wait_saved(self) -> None:
        """Cancel the turn in flight and wait for the `context` rift sends once it has saved the session after
        `done` (also when `done` was just seen), or for rift's exit, at most CANCEL_GRACE."""
        saved = asyncio.Event()
        self._exited = self._exited or asyncio.Event()

        def watch(ev: dict) -> None:
            if not self.mapping.busy and not self.mapping.saving:
                saved.set()

        self.mapping.listeners.append(watch)
        waits = [asyncio.ensure_future(saved.wait()), asyncio.ensure_future(self._exited.wait())]
        try:
            self.mapping.cancel()
            await asyncio.wait(waits, timeout=CANCEL_GRACE, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
            self.mapping.listeners.remove(watch)

    # ---------- events in ----------
    def on_output(self, data: bytes) -> None:
        for line in self._stdout.feed(data):
            if isinstance(line, TooLarge):  # bounded: a runaway line must not grow the daemon's memory
                self.host.log.warning("rift sent a %d-byte line; skipped", line.size)
                continue
            line = line.strip()
            if line:
                try:
                    self.mapping.on_line(line)
                except Exception:  # one bad event must not lose the rest of the chunk
                    self.host.log.exception("rift event %r", line[:200])
        if self.mapping.ready is not None and self._ready is None:
            self._ready = self.host.loop.create_future()
        if self.mapping.ready is not None and self._ready is not None and not self._ready.done():
            self._ready.set_result(self.mapping.ready)

    def on_stderr(self, data: bytes) -> None:
        """Keep draining stderr (a full pipe blocks rift); keep a tail for errors and show lines dimly."""
        for line in self._stderr.feed(data):
            if not isinstance(line, TooLarge):
                self._stderr_line(line)

    def _drain_stderr_partial(self) -> None:
        rest = self._stderr.take_rest()
        if rest.strip():
            self._stderr_line(rest)

    def _stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            self.stderr_tail.append(line)
            self._render(render.notice("rift: " + line))

    # ---------- input ----------
    def can_accept_input(self) -> bool:
        return self.exit_code is None and self.mapping.can_accept_input()

    def validate_send(self, text: str) -> None:
        """Reject what rift would silently drop: an empty prompt never gets a `done`, so the turn would hang."""
        if not text.strip():
            raise DriverError(
                "bad_field", "empty message: rift ignores empty prompts (the turn would never end)"
            )

    async def submit(self, text: str) -> None:
        self.validate_send(text)
        if self.mapping.busy:
            raise DriverError("busy", "a rift turn is already running")
        self.mapping.begin_turn(text)

    def input(self, text: str, echo: bool = True) -> None:
        """Type-like input: a few slash commands map onto rift control commands (feature-detected from
        `ready.commands`); anything else is sent as an unobserved prompt."""
        word, _, rest = text.strip().partition(" ")
        rest = rest.strip()
        control: dict[str, tuple[str, dict]] = {
            "/model": ("set_model", {"model": rest}),
            "/models": ("list_models", {}),
            "/sessions": ("list_sessions", {}),
            "/undo": ("undo", {}),
            "/approve": ("set_approval", {"approve": rest.lower() not in ("off", "false", "no", "0")}),
        }
        if word in control:
            cmd, fields = control[word]
            if cmd not in self.commands:
                self._render(render.notice(f"this rift does not support `{cmd}`", warn=True))
                return
            self._send({"cmd": cmd, **fields})
            return
        if not text.strip():
            return
        if self.mapping.busy or self.mapping.ready is None:
            self._send({"cmd": "prompt", "text": text})  # rift answers with its busy warning
        else:  # a turn nobody observes, but queued sends still wait for its `done`
            self.mapping.begin_turn(text, tracked=False, echo=echo)

    def keys(self, data: bytes) -> None:
        """rift has no keyboard in serve mode, so keys (keystroke, attach typing) drive a one-line editor
        echoed into the transcript: text, Backspace, Enter submits it like `input`; Esc / Ctrl+C cancel the
        turn. Other escape sequences (arrows, function keys) are ignored."""
        if len(data) > 1 and data.startswith(b"\x1b"):
            return
        for ch in self._keys_decoder.decode(data):
            if ch in "\x1b\x03":
                if self._line:
                    self._line = ""
                    self._render(b"\r\x1b[2K")
                self.interrupt()
            elif ch in "\r\n":
                text, self._line = self._line, ""
                if text:
                    self._render(b"\r\n")
                    self.input(text, echo=False)
            elif ch in "\x7f\x08":
                if self._line:
                    self._line = self._line[:-1]
                    self._render(b"\x08 \x08")
            elif ch.isprintable():
                if not self._line:
                    self._render(b"\r\n\x1b[1m\xe2\x9d\xaf\x1b[0m ")  # the "❯ " prompt
                self._line += ch
                self._render(ch.encode("utf-8"))

    def interrupt(self) -> None:
        self.mapping.cancel()

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any]:
        qid = question_id
        if qid is None:
            if not self.mapping.questions:
                raise DriverError("no_question", "no rift question is waiting on this session")
            qid = next(iter(self.mapping.questions))
        q = self.mapping.questions.get(qid)
        labels = self.mapping.labels(q) if q is not None else []
        try:
            label = self.mapping.answer(qid, digit=digit, option=option, text=text)
        except AnswerError as e:
            raise DriverError(e.code, str(e)) from None
        # the option answered, echoed in `answer_sent` (a free-text answer has no digit)
        return {"question_id": qid, "digit": str(labels.index(label) + 1) if label in labels else None}

    # ---------- reporting ----------
    def info(self) -> dict[str, Any]:
        out = self.mapping.info()
        out["rift"]["stderr_tail"] = list(self.stderr_tail)
        out["rift"]["exit_code"] = self.exit_code
        return out
