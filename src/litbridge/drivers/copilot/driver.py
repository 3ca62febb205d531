"""The GitHub Copilot CLI driver: `copilot` under a 200x50 PTY on the shared turn engine (`drivers/engine.py`).

What is Copilot's own lives here and in its plug-ins: the launch line (`launch.py`: `--session-id` pins the
record, `--resume=<id>` resumes it), the 1.0 screen rules (`v1_0.py`: the input area, the busy footer, the trust
and approval boxes), and the session's `events.jsonl` (`events.py`, followed by `follow.py` on the shared record
pipeline), which ends every turn: `complete` at the final `assistant.turn_end` with the last assistant message as
recorded, `interrupted` at `abort`, `turn_error` at `session.error`. The screen streams the answer meanwhile.

Interrupting takes Esc twice (the footer's `esc esc interrupt`): one Esc alone does nothing while a turn runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from litbridge.drivers.base import DriverError, DriverHost, LaunchSpec
from litbridge.drivers.copilot.events import TurnTracker, events_path
from litbridge.drivers.copilot.follow import EventsFollower
from litbridge.drivers.copilot.versions import CLI, LOGO_VERSION_RE
from litbridge.drivers.engine import Timing, Turn
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.drivers.versions import recorded_version
from litbridge.keys import encode_key

ESC = encode_key("Esc")

TIMING = Timing(
    settle=0.15,
    dialog_quiet=0.5,
    key_quiet=0.2,
    enter_gap=0.15,
    startup_timeout=90.0,  # ~7 s to the trust dialog on an idle machine
    submit_timeout=20.0,
    interrupt_grace=1.0,  # the record's `abort` normally ends an interrupted turn first
    ready_stable=0.4,
)
SECOND_ESC = 0.2
"""Seconds between the two Escs of an interrupt (sent only while the CLI still reads busy)."""
DOUBLE_ESC = 1.0
"""Two Escs typed through attach within this many seconds interrupt the turn."""
NO_ANSWER_QUIET = 3.0
"""A model call that ended with no message and no `abort`/`session.error` after it: the turn completes from an
idle screen once the record has been quiet this long."""


class _Dispatch(Dispatch):
    """The screen streams the answer; the record's final message is the exact text (`exact_final`)."""

    stream_on_prompt = True


class CopilotDriver(EngineDriver):
    """GitHub Copilot CLI (1.0.x) under a 200x50 PTY."""

    name = "copilot"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, Timing(**vars(TIMING)))
        self.session_id: str | None = None  # set by the launch (a fresh UUID, or the resumed one)
        self.follower: EventsFollower | None = None
        self._last_esc = 0.0
        self.footer_model: str | None = None

    @property
    def tracker(self) -> TurnTracker | None:
        return self.follower.tracker if self.follower is not None else None

    # ------------------------------------------------------------------------------------------ launch
    def launch(self) -> LaunchSpec:
        spec = super().launch()
        if self.session_id is not None:
            self.follower = EventsFollower(
                self.host,
                events_path(self.env, self.session_id),
                self.resumed,
                self.record.tracker(),
                _Dispatch(self.engine, self.host),
                busy=lambda: self.engine.turn is not None,
            )
        return spec

    async def startup(self) -> dict[str, Any]:
        if self.follower is not None:
            self.follower.start()
        try:
            await self.engine.startup()
        except Exception:
            if self.engine.exited:
                raise DriverError(
                    "spawn_failed",
                    f"copilot exited during startup (code {self.engine.exit_code}): {self.screen_excerpt()}",
                ) from None
            raise
        version = self.rules.version_of(self.rules.clean(self._rows()))
        self.cli_version = self.cli_version or version
        self.footer_model = self.rules.footer_model(self._rows())
        return self.ready_fields()

    def reported_model(self) -> str | None:
        """`create.model`, else `COPILOT_MODEL` from the session's env, else what the footer names."""
        return self.model or self.env.get("COPILOT_MODEL") or self.footer_model

    # ------------------------------------------------------------------------------------------ events in
    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        if self.follower is not None:
            self.follower.close()

    # ------------------------------------------------------------------------------------------ input
    def interrupt(self) -> None:
        """Esc, then a second Esc once the first has been read, if Copilot still works (Esc Esc interrupts; a
        stray second Esc at an idle prompt would open its prompt editor)."""
        self.host.write(ESC)
        self.engine.note_interrupt("command")

        def again() -> None:
            if not self.engine.exited and self.rules.classify(self._rows()).state == "busy":
                self.host.write(ESC)

        self.host.call_later(SECOND_ESC, again)

    def is_interrupt_key(self, data: bytes) -> bool:
        """Esc Esc typed through attach (one Esc alone does not interrupt Copilot)."""
        if data == ESC + ESC:
            return True
        if data != ESC:
            return False
        now = time.monotonic()
        double = now - self._last_esc <= DOUBLE_ESC
        self._last_esc = 0.0 if double else now
        return double

    # ------------------------------------------------------------------------------------------ EngineHooks
    def _rows(self) -> list[str]:
        return list(self.host.terminal.display)

    def read_screen(self) -> Any:
        return self.rules.classify(self._rows())

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        result: list[str] = self.rules.dialog_keys(dialog, index)
        return result

    def unknown_modal(self) -> str | None:
        result: str | None = self.rules.modal_excerpt(self._rows())
        return result

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def interrupt_key(self) -> bytes:
        return ESC

    def interrupt_settled(self, turn: Turn) -> bool:
        """The record's `abort` gets a moment to land first."""
        return self.follower is None or self.follower.quiet_for(turn.interrupt_at or turn.started) >= 0.5

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        if not turn.witnessed:
            return None
        rows = self._rows()
        start = self.rules.find_prompt(rows, turn.text)
        if start is None:
            return None
        return self.rules.extract_response(rows, start) or None

    def on_tick(self, turn: Turn) -> None:
        """A model call ended with no message and nothing followed it: the CLI is idle, so is the turn."""
        tracker, follower, eng = self.tracker, self.follower, self.engine
        if tracker is None or follower is None or not turn.witnessed:
            return
        follower.read()
        if (
            self.engine.turn is turn
            and tracker.open
            and tracker.ended_without_answer
            and eng.cli_idle()
            and follower.quiet_for(turn.started) >= NO_ANSWER_QUIET
        ):
            tracker.open = False
            eng.complete(tracker.text or turn.last_text, tracker.usage, "transcript")

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.follower.path if self.follower is not None else None

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.session_id, self.transcript_path()

    async def stop(self, store_resume: bool) -> str | None:
        token = await super().stop(store_resume)
        if self.follower is not None:
            self.follower.close()
        return token

    def info_fields(self) -> dict[str, Any]:
        screen = self.engine.screen
        return {
            "copilot_session_id": self.session_id,
            **super().info_fields(),
            "screen_state": screen.state if screen is not None else "blank",
        }

    # ------------------------------------------------------------------------------------------ replay
    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """For `litbridge replay`: a private HOME, the recorded session id pinned as the live launch would (unless
        the recording pinned or resumed one), the version the banner printed, and the session's folder the
        recorded `events.jsonl` lines go to."""
        args = list(capture.args)
        sid = capture.transcript_dirs.get("events.jsonl") or ""
        sid = Path(sid).name if sid else ""
        if sid and "--session-id" not in args and not any(a.startswith(("--resume", "-r")) for a in args):
            args += ["--session-id", sid]
        options = {
            "args": args,
            "env": {"HOME": str(home), "COPILOT_HOME": str(home / ".copilot")},
            "cli_version": recorded_version(capture.chunks, LOGO_VERSION_RE),
        }
        return options, home / ".copilot" / "session-state" / (sid or "unknown")
