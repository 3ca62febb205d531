"""The Codex CLI driver: `codex --no-daemon` under a 200x50 PTY on the shared turn engine (`drivers/engine.py`).

What is Codex's own lives here and in the versioned rules (`v0_169`): the launch line (`-c` overrides, never the
user's config.toml), OSC 7501 meanings (Codex emits them unprompted), reading the screen, the startup dialogs it
answers, and the rollout JSONL (`rollout.py`) that ends each turn (`task_complete` / `turn_aborted`), followed
on the shared record pipeline (`drivers/records`). The engine owns settle/state/submit/interrupt/questions.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers import osc7501
from litbridge.drivers.base import DriverHost, LaunchSpec
from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.codex import v0_169
from litbridge.drivers.codex.follow import RolloutFollower
from litbridge.drivers.codex.launch import LaunchHost
from litbridge.drivers.codex.versions import CLI
from litbridge.drivers.engine import Timing, Turn
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.drivers.versions import recorded_version

TIMING = Timing(
    settle=0.1,
    dialog_quiet=0.5,  # trust / migration dialogs are drawn ~0.4 s after the composer (reference §0.7)
    enter_gap=0.12,  # text + CR in one write is a newline, not a submit (reference §7)
    interrupt_grace=1.0,  # the rollout's `turn_aborted` normally ends an interrupted turn first
    ready_stable=0.3,
    ready_stable_status=0.15,
)
READY_NO_OSC = 3.0  # no OSC 7501 report at all (never seen with 0.169): a live composer counts after this
SCREEN_FALLBACK = 4.0  # OSC done/error and no rollout line this long: end the turn from the screen


class _Dispatch(Dispatch):
    """The rollout's agent messages are the exact text (`replace`); its turn ends are noted even for a turn whose
    prompt it has not shown (the OSC `working` report before them is stale from then on)."""

    stream_text = True

    def __init__(self, driver: CodexDriver) -> None:
        super().__init__(driver.engine, driver.host)
        self.driver = driver

    def seen(self, ev: ro.TurnEvent) -> None:
        if ev.kind in ("complete", "error", "interrupted"):
            self.driver._rollout_end_at = self.engine.now()


class CodexDriver(EngineDriver):
    """Codex CLI (0.169.x) under a 200x50 PTY."""

    name = "codex"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, TIMING)
        self.model_label: str | None = None
        self.resume_thread: str | None = None  # the thread `launch` resumes (its file is followed)
        self.follower: RolloutFollower = RolloutFollower(
            host, self.env, self.cwd, self._wanted, self.record.tracker(), _Dispatch(self)
        )
        self._rollout_end_at: float | None = None  # when the rollout last ended a turn (loop time)
        self._osc_end: tuple[str, float] | None = None  # ("done"|"error", when) reported during the open turn

    # ------------------------------------------------------------------------------------------ launch
    def launch(self) -> LaunchSpec:
        spec = super().launch()  # launch.Launch: argv, trust override, resume
        if self.resume_thread:
            self.follower.follow_thread(self.resume_thread)  # its history is not replayed as events
        return spec

    # ------------------------------------------------------------------------------------------ engine hooks
    def read_screen(self) -> v0_169.ScreenState:
        return self.rules.classify(self.host.terminal.display)

    def _title(self) -> str:
        try:
            return str(self.host.terminal.title or "")
        except Exception:
            return ""

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        return self.rules.answer_keys(dialog, index)

    def unknown_modal(self) -> str | None:
        if osc7501.state_of(self.engine.status) == "clear":
            return None  # Codex is exiting: the main screen's goodbye text is no modal
        return self.rules.modal_excerpt(self.host.terminal.display)

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def input_live(self) -> bool:
        """Codex reports OSC 7501 `idle` only once its startup dialogs are gone: before that a painted composer
        is not enough (the trust dialog comes ~0.4 s after it and typed text would pick its options)."""
        if self.engine.status is not None:
            title = self._title()
            return not (self.rules.title_busy(title) or self.rules.title_action_required(title))
        return self.host.loop.time() - self.host.spawned_at >= READY_NO_OSC

    def status_busy(self, status: osc7501.ProgramStatus) -> bool:
        """`working` or `blocked`, unless the rollout ended the turn after that report (the `done` report is a few
        ms behind the rollout line: the turn's end must not read busy in between). `blocked` is an approval pending
        inside the turn, reported ~0.7 s before Codex draws its dialog: the session stays working until the dialog
        (a question) is on screen, never idle in between."""
        if self.rules.osc_state(status)[0] not in self.rules.BUSY_STATES:
            return False
        return self._rollout_end_at is None or self._rollout_end_at < self.engine.status_at

    def status_idle(self, status: osc7501.ProgramStatus) -> bool:
        return self.rules.osc_state(status)[0] in ("idle", "done", "error")

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        """The answer as the screen shows it, until the rollout's first agent message (exact text) takes over."""
        if self.follower.tracker.parts:
            return None
        rows = self.host.terminal.display
        comp = self.rules.composer_row(rows)
        text = self.rules.extract_response(rows, self.rules.find_prompt(rows, turn.text, comp), comp)
        return text or None

    def on_tick(self, turn: Turn) -> None:
        self.follower.poll()
        self._check_fallback()

    # ------------------------------------------------------------------------------------------ lifecycle
    async def startup(self) -> dict[str, Any]:
        self.follower.start()
        await self.engine.startup()
        rows = self.host.terminal.display
        self.cli_version = self.rules.version_of(rows) or self.cli_version
        if self.cli_version and not isinstance(self.rules, CLI.pick(self.cli_version).rules):
            self.use_version(self.cli_version)
            self.engine.invalidate()
        self.model_label = _footer_model(self.rules, rows)
        return self.ready_fields()

    def reported_model(self) -> str | None:
        return self.model or self.model_label

    def on_status(self, fields: dict[str, Any]) -> None:
        state, _kind = self.rules.osc_state(fields)
        if state is None:
            return
        self.engine.on_status(fields)
        turn = self.engine.turn
        if turn is not None and state in ("done", "error") and turn.went_busy:
            self._osc_end = (state, self.engine.now())
        if self.engine.started:
            self.follower.poll()  # the rollout line lands within ~10 ms of the report (reference §8)

    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        self.follower.close()

    # ------------------------------------------------------------------------------------------ input
    async def submit(self, text: str) -> None:
        self._osc_end = None
        await super().submit(text)

    def input(self, text: str) -> None:
        """Type `text` + Enter without observing (slash commands); Enter is its own write, as for `send`."""
        self.type_message(text)
        self.host.call_later(self.engine.timing.enter_gap, lambda: self.host.write(b"\r"))

    # ------------------------------------------------------------------------------------------ rollout
    def _wanted(self) -> tuple[bool, str | None]:
        """For the follower: did a first prompt go in (a send, or Codex busy), and the send's text if any."""
        turn = self.engine.turn
        prompted = turn is not None or self.status_busy(self.engine.status or {})
        want = paste_payload(turn.text).decode("utf-8") if turn is not None and not turn.organic else None
        return prompted, want

    def _check_fallback(self) -> None:
        """Codex reported the end on OSC but its rollout said nothing for a while (e.g. it could not be found):
        end the turn from the screen (source `screen`)."""
        turn, end = self.engine.turn, self._osc_end
        if turn is None or end is None or self.engine.status_working():
            return
        now = self.engine.now()
        if now - max(end[1], self.follower.last_line_at) < SCREEN_FALLBACK:
            return
        rows = self.host.terminal.display
        self._osc_end = None
        if end[0] == "done":
            comp = self.rules.composer_row(rows)
            text = self.rules.extract_response(rows, self.rules.find_prompt(rows, turn.text, comp), comp)
            self.engine.complete(text or turn.last_text, None, "screen")
        else:
            msg = next((r[2:].strip() for r in reversed(rows) if r.startswith(self.rules.ERROR_MARK)), "")
            self.engine.failed(msg or "Codex reported an error", "api_error")

    # ------------------------------------------------------------------------------------------ replay
    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """`litbridge replay` of a Codex capture: a private HOME, the version the recording printed, and the rollout
        folder as a live run would have it. Codex files a new rollout under the day it starts (`sessions/YYYY/MM/DD`)
        and the follower looks in the spawn's day first: a replay starts today, so its rollout goes under today's
        folder (kept under the recording's day, it is found only by the follower's slow full scan, up to 2 s late,
        and the replay's turns start late)."""
        rel = next(iter(capture.transcript_dirs.values()), "sessions")
        if re.fullmatch(r"sessions/\d{4}/\d{2}/\d{2}", rel):
            rel = time.strftime("sessions/%Y/%m/%d")
        options = {
            "env": {"HOME": str(home)},
            "cli_version": recorded_version(capture.chunks, CLI.logo),
        }
        return options, home / ".codex" / rel

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.follower.path

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.follower.thread_id, self.follower.path

    async def stop(self, store_resume: bool) -> str | None:
        token = await super().stop(store_resume)
        self.follower.close()
        return token

    def info_fields(self) -> dict[str, Any]:
        screen = self.engine.screen
        return {
            "codex_thread_id": self.follower.thread_id,
            "osc_state": osc7501.state_of(self.engine.status),
            **super().info_fields(),
            "screen_state": screen.state if screen is not None else None,
        }


def _footer_model(rules: v0_169.Rules, rows: list[str]) -> str | None:
    """`GPT-6-Astra default` from the footer row `  GPT-6-Astra default · ~/project` under the composer."""
    comp = rules.composer_row(rows)
    if comp is None:
        return None
    for row in rows[comp + 1 :]:
        if " · " in row and not row.lstrip().startswith("←"):
            return row.strip().split(" · ", 1)[0] or None
    return None


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = CodexDriver  # what the launch plug-ins read and set is here
