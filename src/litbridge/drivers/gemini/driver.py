"""The Gemini CLI driver: launch with per-session settings, the CLI knowledge the turn engine asks for (readings
from title + screen, dialog keys, paste submit), and turn ends from the chat JSONL.

The shared machinery (settle debounce, state, verified submit, questions, interrupts, startup dialog loop, the
per-turn deadline) is `drivers/engine.py`; version knowledge (titles, rows, dialogs) is `v0_61.Rules`, the launch
line and per-session settings `launch.Launch` (both picked by `versions.CLI`); the chat file's
meaning is `chat`. The session owns turn ids, the queue and the one-terminal-event rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverError, DriverHost
from litbridge.drivers.engine import Timing, Turn, TurnEngine
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.gemini.chat import ChatEvent, find_chat_file, gemini_home, project_slug
from litbridge.drivers.gemini.follow import ChatFollower
from litbridge.drivers.gemini.launch import TURN_TIMEOUT, LaunchHost, flag_value
from litbridge.drivers.gemini.v0_61 import Reading
from litbridge.drivers.gemini.versions import CLI
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.drivers.versions import recorded_version
from litbridge.keys import encode_key

ESC, CTRL_C = encode_key("Esc"), encode_key("C-c")

INPUT_QUIET = 0.4  # `input`: output quiet this long after the typed text shows before Enter

TIMING = Timing(
    settle=0.15,  # busy -> approval dialog passes through ~12 ms of "idle" [gemini_tool_approval]
    startup_timeout=90.0,
    ready_stable=0.5,  # the trust dialog paints ~0.13 s after an idle-looking input box [gemini_first_start]
    submit_timeout=20.0,
    interrupt_grace=1.0,
    tick=0.25,
)


class _Engine(TurnEngine):
    """The shared engine; a turn that times out (the per-turn deadline, an unsubmitted message) says what the
    CLI showed, e.g. `Thinking... (esc to cancel, 600s)` while Gemini retries an API error silently."""

    def failed(self, message: str, kind: str = "api_error", detail: str | None = None) -> bool:
        if kind == "timeout" and self.turn is not None and detail is None:
            # the live area now, or, when the deadline falls between the reads of a repaint (the area blank for a
            # moment), the spinner of the last settled screen
            shown = self.hooks.shown()  # type: ignore[attr-defined]
            detail = shown or getattr(self.screen, "spinner", None) or None
        return super().failed(message, kind, detail)


class _Dispatch(Dispatch):
    """No turn-end record: a turn completes on its last `answer` once the CLI is idle (`_maybe_complete`, after each
    read); an interrupt keeps the text the screen showed; an error says what the CLI showed too."""

    def __init__(self, driver: GeminiDriver) -> None:
        super().__init__(driver.engine, driver.host)
        self.driver = driver

    def interrupted(self, ev: ChatEvent, turn: Turn) -> None:
        self.engine.interrupted(turn.last_text or ev.text)

    def error(self, ev: ChatEvent, turn: Turn) -> None:
        shown = self.driver.rules.error_lines(self.host.terminal.display)
        extra = f" (the CLI showed: {shown[-1]})" if shown and shown[-1] != ev.text else ""
        self.engine.failed(ev.text + extra, "api_error")


class GeminiDriver(EngineDriver):
    """Gemini CLI (0.61.x) under a 200x50 PTY, on the shared turn engine."""

    name = "gemini"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, Timing(**{**TIMING.__dict__, "turn_deadline": TURN_TIMEOUT}), _Engine)
        self.session_id: str | None = None
        self.home = self.cli_home({**os.environ, **self.env})
        self.session_home: str | None = None
        self.title = ""
        self.footer_model: str | None = None  # what the footer names below `/model` (`Auto` by default)
        self.chat_path_hint: Path | None = None
        self.follower: ChatFollower = self.make_follower()
        self._tasks: set[asyncio.Task[None]] = set()

    def cli_home(self, env: dict[str, str]) -> Path:
        """The CLI's own config folder (`~/.gemini`); a fork names its own."""
        return gemini_home(env)

    def make_follower(self) -> ChatFollower:
        """The follower of this session's chat file (a fork's driver brings its own)."""
        return ChatFollower(
            self.host,
            self.home,
            self.cwd,
            lambda: (self.session_id, self.chat_path_hint),
            self.record.tracker(),
            _Dispatch(self),
            self._after_read,
            busy=lambda: self.engine.turn is not None,
        )

    # ------------------------------------------------------------------------------------------ engine hooks
    def read_screen(self) -> Reading:
        reading: Reading = self.rules.read(self.host.terminal.display, self.title)
        if reading.version and reading.version != self.cli_version:
            self.use_version(reading.version)  # the header of the first frame (no `gemini --version`: slow)
            reading = self.rules.read(self.host.terminal.display, self.title)
        return reading

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        return self.rules.dialog_keys(dialog, index)

    def type_message(self, text: str) -> None:
        """Always a bracketed paste: a `?` in a plain multi-character write is dropped (reference §0.5)."""
        self.write_paste(paste_payload(text))

    def is_interrupt_key(self, data: bytes) -> bool:
        """Esc or Ctrl+C typed by a user; the `interrupt` command sends Esc (the engine's default
        `interrupt_key`): Ctrl+C would also arm the CLI's exit guard (reference §6)."""
        return data in (ESC, CTRL_C)

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        rows = self.host.terminal.display
        start = self.rules.find_prompt(rows, turn.text if len(turn.text) < 800 else None)
        if start is None:
            return None
        return self.rules.extract_response(rows, start) or None

    def on_committed(self, reading: Any) -> None:
        self._maybe_complete()

    def on_tick(self, turn: Turn) -> None:
        self.follower.read()

    def on_turn_end(self, turn: Turn, how: str) -> None:
        self.follower.tracker.finish()
        self._read_footer_model()  # `/model` may have switched it
        if how == "error" and self.engine.busy():
            # the deadline passed while the CLI still retries: stop its retry loop so the next send can go
            self.host.write(ESC)

    def shown(self) -> str:
        """What the live area shows right now (spinner, errors), one line per row."""
        return self.rules.status_excerpt(self.host.terminal.display)

    # ------------------------------------------------------------------------------------------ lifecycle
    async def startup(self) -> dict[str, Any]:
        try:
            await self.engine.startup()
        except DriverError as exc:
            if self.engine.exited:
                raise DriverError(exc.code, f"{exc.message}: {self.screen_excerpt()}") from None
            raise
        if not self.engine.exited:
            self.follower.start()
        model = await self.read_once_painted(lambda: self.rules.footer_model(self.host.terminal.display))
        self.footer_model = model or self.footer_model
        return self.ready_fields()

    def reported_model(self) -> str | None:
        """The model asked for (`create.model`), else the one the footer shows."""
        return self.model or self.footer_model

    def _read_footer_model(self) -> None:
        self.footer_model = self.rules.footer_model(self.host.terminal.display) or self.footer_model

    def on_output(self, data: bytes) -> None:
        title = getattr(self.host.terminal, "title", "") or ""
        if title != self.title:
            self.title = title  # the title is half the state: re-read even if no row changed
            self.engine.on_screen()

    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        for task in list(self._tasks):
            task.cancel()
        self.follower.close()
        if self.session_home:
            shutil.rmtree(self.session_home, ignore_errors=True)
            self.session_home = None

    def input(self, text: str) -> None:
        """Type `text` + Enter without observing a turn, Enter once the text shows in the box and again while it
        stays there. A one-line `/command` is typed as keys: pasted, the CLI takes it as a literal prompt (seen
        live); anything else is pasted, as for `send`."""
        if text.startswith("/") and "\n" not in text and "?" not in text:
            self.host.write(paste_payload(text))
        else:
            self.type_message(text)
        task = self.host.loop.create_task(self._enter_when_shown())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _enter_when_shown(self, tries: int = 3) -> None:
        engine = self.engine
        start = last_enter = engine.now()
        enters = 0
        while not engine.exited and enters < tries and engine.now() - start < 10.0:
            await engine.wait_change(0.2)
            now = engine.now()
            reading = engine.reading()
            shown = reading.state == "idle" and bool(reading.draft)
            if enters and not reading.draft:
                return  # taken
            # the `/command` suggestions render a moment after the text (the recording pressed Enter 0.4 s later)
            if engine.quiet_for() < INPUT_QUIET or now - last_enter < (1.0 if enters else 0.0):
                continue
            if shown or now - start >= 1.5:
                self.host.write(b"\r")
                enters += 1
                last_enter = now

    def transcript_path(self) -> Path | None:
        return self.chat_path

    def resume_record(self) -> tuple[str | None, Path | None]:
        """The session id, and its chat file wherever it is (it may not be pinned yet)."""
        sid = self.session_id
        return sid, (find_chat_file(self.home, sid) if sid else None)

    def info_fields(self) -> dict[str, Any]:
        return {
            "gemini_session_id": self.session_id,
            "title_state": self.rules.title_state(self.title),
            **super().info_fields(),
        }

    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """For `litbridge replay`: the session options (env, and the args with the recorded session id pinned as
        the live driver would, unless the recording resumed one) and the folder the recorded chat lines go to."""
        gdir = home / ".gemini"
        slug = None
        for folder in capture.transcript_dirs.values():  # <tmp dir>/<slug>/chats/<file>: the last one wins
            parts = Path(folder).parts
            if len(parts) >= 3 and parts[-1] == "chats":
                slug = parts[-2]
        slug = slug or project_slug(capture.cwd, gdir)
        gdir.mkdir(parents=True, exist_ok=True)
        (gdir / "projects.json").write_text(json.dumps({"projects": {capture.cwd: slug}}), encoding="utf-8")
        args = list(capture.args)
        if flag_value(args, ("--resume", "-r", "--session-id")) is None:
            for _t, _name, line in capture.transcript[:1]:
                try:
                    sid = json.loads(line).get("sessionId")
                except ValueError:
                    sid = None
                if isinstance(sid, str):
                    args += ["--session-id", sid]
        options = {
            "env": {"HOME": str(home)},
            "args": args,
            "cli_version": recorded_version(capture.chunks, CLI.logo),
        }
        return options, gdir / "tmp" / slug / "chats"

    # ------------------------------------------------------------------------------------------ chat file
    @property
    def chat_path(self) -> Path | None:
        return self.follower.path

    def _pin(self) -> bool:
        return self.follower.locate()

    def _after_read(self) -> None:
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        """The chat's last record of the turn is an answer with no pending tool call, and the CLI is idle: the
        title says Ready and the screen reads idle now (three independent signals, so no settle wait; without
        the title, the engine's settled screen decides)."""
        turn, pending = self.engine.turn, self.follower.tracker.pending
        if turn is None or pending is None or not turn.witnessed:
            return
        reading = self.engine.reading()
        if reading.state != "idle":
            return  # e.g. a `gemini` record written before its tool calls are added to it
        title = reading.title if isinstance(reading, Reading) else None  # always ours: read_screen made it
        if title != self.rules.TITLE_READY and not self.engine.cli_idle():
            return
        content = pending.text
        if content and content != turn.last_text:
            self.engine.set_text(content)  # the last `replace` is the exact text too
        self.engine.complete(content, pending.data.get("usage"), "transcript")


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = GeminiDriver  # what the launch plug-ins read and set is here
