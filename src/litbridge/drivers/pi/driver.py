"""The Pi driver: `pi` (`@mariozechner/pi-coding-agent`) under a 200x50 PTY on the shared turn engine.

What is Pi's own: the launch line (`launch.Launch`: the session file named up front), the screen (`v0_73.Rules`:
the loader above the editor, no dialogs: Pi runs tools without asking), the session JSONL that ends each turn
(`session.py`: `stopReason` `stop` / `aborted` / `error`), and the OSC 133 zone marks Pi draws around each
rendered message (read with `shellmarks.MarkReader`: a mark means a message was just drawn, so the record is read
at once). An API error is final only once Pi stops retrying it: the record's `error` entry ends the turn when the
screen reads idle (no `Retrying` loader) a moment later.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverError, DriverHost
from litbridge.drivers.engine import Timing, Turn
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.pi.follow import SessionFollower
from litbridge.drivers.pi.launch import LaunchHost
from litbridge.drivers.pi.session import PiEvent, agent_dir, session_dir
from litbridge.drivers.pi.v0_73 import ScreenState
from litbridge.drivers.pi.versions import CLI
from litbridge.drivers.records import Dispatch
from litbridge.drivers.shellmarks import MarkReader
from litbridge.drivers.versions import recorded_version

TIMING = Timing(
    settle=0.15,
    startup_timeout=90.0,  # a Node start on a busy machine
    ready_stable=0.5,
    submit_timeout=20.0,
    interrupt_grace=1.0,  # the record's `aborted` entry normally ends an interrupted turn first
    tick=0.25,
)
ERROR_FINAL_QUIET = 1.0
"""An `error` entry is final when the screen has read idle (no retry loader) for this long after it."""


class _Dispatch(Dispatch):
    """The record's `error` is held until Pi stops retrying (`PiDriver._maybe_fail`); any later entry of the turn
    (a retry that streamed, a tool call) drops it."""

    def __init__(self, driver: PiDriver) -> None:
        super().__init__(driver.engine, driver.host)
        self.driver = driver

    def seen(self, ev: PiEvent) -> None:
        if ev.kind != "error":
            self.driver.pending_error = None

    def error(self, ev: PiEvent, turn: Turn) -> None:
        self.driver.pending_error = (ev.text, self.engine.now())


class PiDriver(EngineDriver):
    """Pi (0.73.x) under a 200x50 PTY."""

    name = "pi"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, TIMING)
        self.session_path: Path | None = None
        self.session_token: str | None = None
        self.footer_model: str | None = None
        self.pending_error: tuple[str, float] | None = None
        self.zones = 0  # OSC 133 `A` marks seen: messages Pi drew
        self.marks = MarkReader()
        # the picked Record plug-in's tracker; `use_version` hands the follower a later-known version's
        self.follower: SessionFollower = SessionFollower(
            host, self.record.tracker(), _Dispatch(self), busy=lambda: self.engine.turn is not None
        )

    # ------------------------------------------------------------------------------------------ engine hooks
    def read_screen(self) -> ScreenState:
        reading: ScreenState = self.rules.classify(list(self.host.terminal.display))
        if reading.version and reading.version != self.cli_version:
            self._version_found(reading.version)  # the header of the first frame (no `pi --version`: slow)
            reading = self.rules.classify(list(self.host.terminal.display))
        return reading

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        rows = list(self.host.terminal.display)
        start = self.rules.find_prompt(rows, turn.text if len(turn.text) < 4000 else None)
        return self.rules.extract_response(rows, start) or None

    def on_committed(self, reading: Any) -> None:
        self._maybe_fail()

    def on_tick(self, turn: Turn) -> None:
        self.follower.read()
        self._maybe_fail()

    def interrupt_settled(self, turn: Turn) -> bool:
        """Idle after an interrupt: the record's `aborted` entry (with the partial text) ends the turn if it is
        there; otherwise the engine does."""
        self.follower.read()
        return self.engine.turn is turn

    def on_turn_end(self, turn: Turn, how: str) -> None:
        self.pending_error = None
        self.footer_model = self.rules.footer_model(list(self.host.terminal.display)) or self.footer_model

    def _maybe_fail(self) -> None:
        pending, turn = self.pending_error, self.engine.turn
        if pending is None or turn is None or turn.interrupt_at is not None:
            return
        if not self.engine.cli_idle() or self.engine.now() - pending[1] < ERROR_FINAL_QUIET:
            return
        self.pending_error = None
        self.engine.failed(pending[0], "api_error")

    # ------------------------------------------------------------------------------------------ lifecycle
    def launch(self) -> Any:
        spec = super().launch()
        if self.session_path is not None:
            self.follower.follow(self.session_path, from_start=not self.resumed)
        return spec

    async def startup(self) -> dict[str, Any]:
        try:
            await self.engine.startup()
        except DriverError as exc:
            if self.engine.exited:
                raise DriverError(exc.code, f"{exc.message}: {self.screen_excerpt()}") from None
            raise
        self.footer_model = await self.read_once_painted(
            lambda: self.rules.footer_model(list(self.host.terminal.display))
        )
        return self.ready_fields()

    def reported_model(self) -> str | None:
        return self.model or self.footer_model

    def on_output(self, data: bytes) -> None:
        marks = self.marks.feed(data)
        if marks:
            self.zones += sum(1 for letter, _ in marks if letter == "A")
            if self.engine.started:
                self.follower.read()  # a message was just drawn: its entry is (about to be) in the record

    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        self.follower.close()

    async def stop(self, store_resume: bool) -> str | None:
        token = await super().stop(store_resume)
        self.follower.close()
        return token

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.session_path

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.session_token, self.session_path

    def info_fields(self) -> dict[str, Any]:
        return {"pi_session_token": self.session_token, "osc133_zones": self.zones, **super().info_fields()}

    # ------------------------------------------------------------------------------------------ replay
    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """`litbridge replay` of a Pi capture: a private HOME, the recorded session file pinned with `--session`
        in its folder under that HOME (as the live launch names it), and that folder for its recorded lines.
        A `--session` the recording passed named a file under the recorder's HOME: it is replaced."""
        env = {"HOME": str(home)}
        folder = session_dir(agent_dir(env), capture.cwd)
        args, i = list(capture.args), 0
        while i < len(args):
            if args[i] == "--session":
                del args[i : i + 2]
            elif args[i].startswith("--session="):
                del args[i]
            else:
                i += 1
        names = [name for _t, name, _line in capture.transcript[:1]]
        if names:
            args += ["--session", str(folder / Path(names[0]).name)]
        options = {"env": env, "args": args, "cli_version": recorded_version(capture.chunks, CLI.logo)}
        return options, folder


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = PiDriver  # what the launch plug-ins read and set is here
