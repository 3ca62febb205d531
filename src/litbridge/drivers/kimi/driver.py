"""The Kimi Code driver: `kimi` (`@moonshot-ai/kimi-code`, Node >= 22.19) under a 200x50 PTY on the shared engine.

What is Kimi's own: the launch line (`launch.Launch`: `-S <id>` to resume), the screen (`v2_1.Rules`: the editor
box, the loader, the trust and approval panels), and the wire log (`wire.py`) that ends each turn (`turn.ended`
completed / cancelled / failed). Kimi draws OSC 133 zone marks around what it renders; a mark makes the driver read
the wire log at once (`shellmarks.MarkReader`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverError, DriverHost
from litbridge.drivers.engine import Timing, Turn
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.kimi.follow import WireFollower
from litbridge.drivers.kimi.launch import LaunchHost
from litbridge.drivers.kimi.v2_1 import ScreenState
from litbridge.drivers.kimi.versions import CLI
from litbridge.drivers.kimi.wire import kimi_home
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.drivers.shellmarks import MarkReader
from litbridge.drivers.versions import recorded_version

TIMING = Timing(
    settle=0.15,
    dialog_quiet=0.5,
    startup_timeout=90.0,  # a Node start on a busy machine (the trust panel came after ~4.4 s on an idle one)
    ready_stable=0.6,
    submit_timeout=20.0,
    interrupt_grace=1.0,  # the wire's `turn.ended` (cancelled) normally ends an interrupted turn first
    tick=0.25,
)


class KimiDriver(EngineDriver):
    """Kimi Code (2.1.x) under a 200x50 PTY."""

    name = "kimi"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, TIMING)
        self.home: Path = kimi_home(self.env)
        self.resume_dir: Path | None = None
        self.known_sessions: set[str] = set()
        self.footer_model: str | None = None
        self.marks = MarkReader()
        # the picked Record plug-in's tracker; `use_version` hands the follower a later-known version's
        self.follower: WireFollower = WireFollower(
            host,
            self.record.tracker(),
            Dispatch(self.engine, host),
            busy=lambda: self.engine.turn is not None,
        )

    # ------------------------------------------------------------------------------------------ engine hooks
    def read_screen(self) -> ScreenState:
        reading: ScreenState = self.rules.classify(list(self.host.terminal.display))
        if reading.version and reading.version != self.cli_version:
            self._version_found(reading.version)
            reading = self.rules.classify(list(self.host.terminal.display))
        return reading

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        return self.rules.dialog_keys(dialog, index)

    def unknown_modal(self) -> str | None:
        return self.rules.modal_excerpt(list(self.host.terminal.display))

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        rows = list(self.host.terminal.display)
        start = self.rules.find_prompt(rows, turn.text)
        return self.rules.extract_response(rows, start) or None

    def on_tick(self, turn: Turn) -> None:
        self.follower.read()

    def interrupt_settled(self, turn: Turn) -> bool:
        self.follower.read()
        return self.engine.turn is turn

    def on_turn_end(self, turn: Turn, how: str) -> None:
        self.footer_model = self.rules.footer_model(list(self.host.terminal.display)) or self.footer_model

    # ------------------------------------------------------------------------------------------ lifecycle
    async def startup(self) -> dict[str, Any]:
        try:
            await self.engine.startup()
        except DriverError as exc:
            if self.engine.exited:
                raise DriverError(exc.code, f"{exc.message}: {self.screen_excerpt()}") from None
            raise
        self.follower.begin(self.home, self.cwd, self.known_sessions, self.resume_dir)
        self.footer_model = await self.read_once_painted(
            lambda: self.rules.footer_model(list(self.host.terminal.display))
        )
        return self.ready_fields()

    def reported_model(self) -> str | None:
        return self.model or self.footer_model

    def on_output(self, data: bytes) -> None:
        if self.marks.feed(data) and self.engine.started:
            self.follower.read()

    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        self.follower.close()

    async def stop(self, store_resume: bool) -> str | None:
        token = await super().stop(store_resume)
        self.follower.close()
        return token

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.follower.path

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.follower.session_id, self.follower.path

    def info_fields(self) -> dict[str, Any]:
        return {"kimi_session_id": self.follower.session_id, **super().info_fields()}

    # ------------------------------------------------------------------------------------------ replay
    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """`litbridge replay` of a Kimi capture: a private HOME holding the recorded session's folder (empty), named
        as the resume token, so the driver follows its wire log from the start as it appears there (the live
        launch finds a new session through `session_index.jsonl`, which names the recorder's folders); the wire
        log's folder is where the recorded lines go. The replayed `ready` says `resumed: true`."""
        env = {"HOME": str(home)}
        data = kimi_home(env)
        rel = next(iter(capture.transcript_dirs.values()), "")
        parts = Path(rel).parts
        if "sessions" in parts:  # mirrored from HOME (`.kimi-code/sessions/...`) or from the data folder
            parts = parts[parts.index("sessions") :]
        else:
            parts = ("sessions", "wd_replay", "session_replay", "agents", "main")
        folder = data.joinpath(*parts)
        options: dict[str, Any] = {
            "env": env,
            "args": list(capture.args),
            "cli_version": recorded_version(capture.chunks, CLI.logo),
        }
        if len(parts) >= 5:
            session = folder.parents[1]
            session.mkdir(parents=True, exist_ok=True)
            options["resume"] = session.name
        return options, folder


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = KimiDriver  # what the launch plug-ins read and set is here
