"""The opencode driver: `opencode` under a 200x50 PTY on the shared turn engine (`drivers/engine.py`).

What is opencode's own lives here and in its plug-ins: the launch line and the session's own config
(`launch.py`), reading the screen (`v1_18.Rules`: the input box, the progress row, the permission prompt, whose
selected option only its colour shows, so the driver hands the rules a look at the cells), the interrupt (Esc
twice: the first only arms it), and the SQLite session store (`store.py`, `follow.py`) whose rows end each turn:
the prompt, tool calls, the exact answer, usage, an abort or an API error.

The first opencode started on a user's data folder creates and migrates its database; a second one started on
it meanwhile can hang before it draws anything (observed on 1.18.33: its log stops at `init`, for minutes, while
the first one migrates and starts). Sessions of this daemon that would start on a database another of its
sessions is creating wait until that first start is over (`prepare`).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverError, DriverHost
from litbridge.drivers.engine import Timing, Turn
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.opencode.follow import StoreFollower, session_exists
from litbridge.drivers.opencode.launch import LaunchHost, flag_value
from litbridge.drivers.opencode.v1_18 import Reading
from litbridge.drivers.opencode.versions import CLI
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.turns import TURN_STATES

ESC = b"\x1b"
SECOND_ESC = 0.25  # seconds between the two Esc of an interrupt (one write of both is read as Alt+Esc)

TIMING = Timing(
    settle=0.15,
    dialog_quiet=0.5,
    startup_timeout=150.0,  # the first start migrates the database: ~25 s on 2 idle cores, more when busy
    ready_stable=0.5,
    submit_timeout=30.0,
    interrupt_grace=1.5,  # the store's abort row (with the partial text) normally ends the turn first
    tick=0.25,
)

_first_starts: dict[Path, asyncio.Event] = {}
"""Databases a session of this daemon is creating (its opencode's first start), set when that start is over."""


class OpencodeDriver(EngineDriver):
    """opencode (1.18.x) under a 200x50 PTY."""

    name = "opencode"
    CLI = CLI

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, Timing(**TIMING.__dict__))
        self._probed: list[tuple[int, int]] = []  # the cells the last reading asked the colour of
        self.session_dir: str | None = None
        self.store = self.follower = StoreFollower(
            host,
            self.env,
            self.cwd,
            self._wanted,
            self.record.tracker(),
            Dispatch(self.engine, host),
            busy=lambda: self.engine.turn is not None,
        )
        self._first_text: str | None = None
        self._creating: Path | None = None  # the database this session's first start creates

    # ------------------------------------------------------------------------------------------ launch
    async def prepare(self) -> None:
        """Before the spawn: wait while another session of this daemon is creating the same database (bounded by
        the start-up timeout); start as its creator when there is none yet."""
        await super().prepare()
        db = self.store.db
        if db is None:
            return
        pending = _first_starts.get(db)
        if pending is not None:
            self.host.log.info("opencode: waiting for another session's first start on %s", db)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pending.wait(), self.engine.timing.startup_timeout)
        elif not db.exists():
            _first_starts[db] = asyncio.Event()
            self._creating = db

    def _first_start_over(self) -> None:
        db, self._creating = self._creating, None
        if db is not None:
            done = _first_starts.pop(db, None)
            if done is not None:
                done.set()

    def resume_exists(self, sid: str) -> bool:
        return session_exists(self.store.db, sid)

    def launch(self) -> Any:
        spec = super().launch()
        resume = None
        if self.resumed:
            resume = flag_value(spec.argv[1:], ("--session", "-s"))
        self.store.begin(resume)
        return spec

    # ------------------------------------------------------------------------------------------ engine hooks
    def screen_key_extra(self) -> tuple[bool, ...]:
        """The highlight of the cells the last reading probed: moving the selection changes only colours, which
        the terminal's text generation does not see (the engine re-reads the screen when this changes)."""
        return tuple(self._cell_highlight(y, x) for y, x in self._probed)

    def _highlight(self, y: int, x: int) -> bool:
        self._probed.append((y, x))
        return self._cell_highlight(y, x)

    def _cell_highlight(self, y: int, x: int) -> bool:
        """The cell is drawn on the selected option's background (differs from the cell two columns left, which is
        the gap before an option)."""
        try:
            row = self.host.terminal.screen.buffer[y]
            return bool(row[x].bg != row[max(0, x - 2)].bg)
        except Exception:
            return False

    def read_screen(self) -> Reading:
        rows = list(self.host.terminal.display)
        self._probed = []
        reading: Reading = self.rules.read(rows, None, self._highlight)
        if reading.version and reading.version != self.cli_version:
            self.use_version(reading.version)
            self._probed = []
            reading = self.rules.read(rows, None, self._highlight)
        return reading

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        keys: list[str] = self.rules.dialog_keys(dialog, index)
        return keys

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def is_interrupt_key(self, data: bytes) -> bool:
        """One Esc only arms opencode's interrupt; the store's abort row ends a turn a user interrupted."""
        return False

    def interrupt(self) -> None:
        super().interrupt()
        self.host.call_later(SECOND_ESC, self._second_esc)

    def _second_esc(self) -> None:
        if self.engine.turn is not None and not self.engine.exited:
            self.host.write(ESC)

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        rows = list(self.host.terminal.display)
        box = reading.box if isinstance(reading, Reading) else None
        start = self.rules.find_prompt(rows, turn.text if len(turn.text) < 800 else None, box)
        text = self.rules.extract_response(rows, start, box)
        return text or None

    def on_tick(self, turn: Turn) -> None:
        self.store.read()

    # ------------------------------------------------------------------------------------------ lifecycle
    async def startup(self) -> dict[str, Any]:
        try:
            await self.engine.startup()
        except DriverError as exc:
            if self.engine.exited:
                raise DriverError(exc.code, f"{exc.message}: {self.screen_excerpt()}") from None
            raise
        finally:
            self._first_start_over()
        self.store.start()
        return self.ready_fields()

    def on_exit(self, exit_code: int | None) -> None:
        self._first_start_over()
        super().on_exit(exit_code)
        self.store.close()
        if self.session_dir:
            shutil.rmtree(self.session_dir, ignore_errors=True)
            self.session_dir = None

    async def submit(self, text: str) -> None:
        if self._first_text is None:
            self._first_text = text
        await super().submit(text)

    def _wanted(self) -> str | None:
        """For the follower: the first send's text; "" once a prompt was typed into opencode itself (a turn is
        open, or the screen shows this opencode working with no send: an attached user, or a replay, typed it)."""
        if self._first_text is not None:
            return self._first_text
        if self.engine.turn is not None or self.host.state in TURN_STATES:
            return ""
        return None

    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """`litbridge replay` of an opencode capture: a private HOME whose database is created empty from the
        recorded schema (`Capture.replay_sqlite`) and gets the recorded `event` rows at their times; the data folder
        and the database are named in the env, so a user's own `XDG_DATA_HOME`/`OPENCODE_DB` is not read."""
        dbs = capture.replay_sqlite(home)
        env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")}
        if dbs:
            env["OPENCODE_DB"] = str(dbs[0])
        return {"env": env}, home / "transcripts"  # the version: read from the first frame, as live

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.store.path

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.store.session_id, self.store.path

    async def stop(self, store_resume: bool) -> str | None:
        token = await super().stop(store_resume)
        self._first_start_over()
        self.store.close()
        return token

    def info_fields(self) -> dict[str, Any]:
        return {"opencode_session_id": self.store.session_id, **super().info_fields()}


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = OpencodeDriver  # what the launch plug-ins read and set is here
