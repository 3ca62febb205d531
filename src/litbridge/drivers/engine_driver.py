"""`EngineDriver`: the `Driver` side of a screen-driven CLI on the shared turn engine (`drivers/engine.py`).

Every such driver (Claude, Codex, Gemini) read the same `create` options, forwarded the same `Driver` calls to its
`TurnEngine` and reported stop/info the same way; that wiring lives here once, so a driver class holds only what
is its CLI's own (launch line, rules, the record that ends turns). Override a method to add to it (call `super()`)
or to replace it; the engine's interface is unchanged.

A driver names its plug-in tables in `CLI` (a `kit.CliSpec`); `use_version` picks the `Rules`, `Record` and
`Launch` of a CLI version (the newest until the version is known), `prepare` learns it from `<binary> --version`
without blocking the loop, and `launch` / `startup_answer` / `question_kind` are the picked plug-ins'. The
driver's `follower` (a `records.RecordFollower`) maps the record with the picked `Record`'s `tracker()`; a
version learnt after the follower was made hands it the new version's tracker while nothing was read yet.
"""

from __future__ import annotations

import os
from collections import ChainMap
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from litbridge.drivers import versions
from litbridge.drivers.base import Driver, DriverHost, LaunchSpec, meaningful_lines
from litbridge.drivers.engine import EngineHooks, Timing, TurnEngine
from litbridge.drivers.kit import CliSpec, Launch, Record
from litbridge.drivers.paste import PASTE_END, PASTE_START
from litbridge.drivers.records import RecordFollower

_T = TypeVar("_T")
FOOTER_WAIT = 3.0  # seconds `read_once_painted` waits at most (`ready`: a footer painted after the input box)
FOOTER_QUIET = 2.0  # ... and at most this long without output (a screen that settled without it)


class EngineDriver(Driver, EngineHooks):
    """A `Driver` whose turns are the engine's: the common options, the forwarding, stop and info."""

    def __init__(
        self,
        host: DriverHost,
        options: dict[str, Any],
        timing: Timing | None = None,
        engine: type[TurnEngine] = TurnEngine,
    ) -> None:
        super().__init__(host, options)
        self.cwd = str(options.get("working_dir") or os.environ.get("HOME") or os.getcwd())
        self.env: dict[str, str] = {str(k): str(v) for k, v in (options.get("env") or {}).items()}
        self.args: list[str] = [str(a) for a in (options.get("args") or [])]
        self.model: str | None = options.get("model")
        self.resume_token: str | None = options.get("resume")
        self.resumed = False
        self.engine = engine(host, self, timing)
        self.cli_version: str | None = None
        self.use_version(options.get("cli_version"))  # replay: what the recording printed

    CLI: ClassVar[CliSpec]
    markdown = True  # the AI CLIs on the engine answer in markdown
    rules: Any
    record: Record
    launcher: Launch[Any]
    follower: RecordFollower[Any] | None = None
    """What follows the CLI's record, once the driver made it, with `record.tracker()` as its tracker."""

    # ------------------------------------------------------------------------------------------ versions
    def use_version(self, version: str | None) -> None:
        """Read the CLI as `version` from now on (None: not known yet, the newest plug-ins)."""
        picked = self.CLI.pick(version)
        self.cli_version = version
        self.rules, self.launcher = picked.rules(), picked.launch(self)
        if type(getattr(self, "record", None)) is not picked.record:
            self.record = picked.record()
            if self.follower is not None and not self.follower.use_tracker(self.record.tracker()):
                self.host.log.warning(
                    "%s %s: the record is half read by %s, which follows it to the end",
                    self.name,
                    version,
                    self.follower.tracker,
                )

    @classmethod
    def install_hint(cls) -> str | None:
        return f"npm install -g {cls.CLI.package}" if cls.CLI.package else None

    def binary(self) -> str:
        return str(self.options.get("cli") or self.name)

    async def prepare(self) -> None:
        """The binary's version before the first frame (`<binary> --version`, in a worker thread, once per file)."""
        if self.cli_version is None and self.CLI.version_from_binary:
            self._version_found(await versions.detect_version(self.binary(), self._env_view()))

    def _env_view(self) -> ChainMap[str, str]:
        """The session's environment over the daemon's, as a view: the version lookup reads PATH from it at every
        create, and copying `os.environ` (decoding every variable) cost more than the lookup."""
        return ChainMap(self.env, os.environ)

    def _version_found(self, version: str | None) -> None:
        if version is None:
            return
        self.use_version(version)
        if not self.CLI.knows(version):
            self.host.log.warning(
                "%s %s: no rules for this version; using %s", self.name, version, self.rules
            )

    def launch(self) -> LaunchSpec:
        if (
            self.cli_version is None and self.CLI.version_from_binary
        ):  # no `prepare` (tools): a known answer only
            self._version_found(versions.cached_version(self.binary(), self._env_view()))
        return self.launcher.spec()

    def startup_answer(self, dialog: Any) -> str | None:
        return self.launcher.startup_answer(dialog)

    def question_kind(self, dialog: Any) -> str:
        result: str = self.rules.question_kind(dialog)
        return result

    # ------------------------------------------------------------------------------------------ helpers
    def reported_model(self) -> str | None:
        """The model `ready` and `info` report."""
        return self.model

    def ready_fields(self) -> dict[str, Any]:
        """What `startup()` returns once the engine is ready."""
        return {"model": self.reported_model(), "resumed": self.resumed}

    def screen_excerpt(self) -> str:
        """The screen's last meaningful rows (no banner art), for an error when the CLI exits during startup."""
        return meaningful_lines(self.host.terminal.display)[-600:]

    def write_paste(self, payload: bytes) -> None:
        """`payload` as one bracketed paste (no Enter)."""
        self.host.write(PASTE_START + payload + PASTE_END)

    def transcript_path(self) -> Path | None:
        """The file the CLI records this conversation in, once known (`info`)."""
        return None

    def resume_record(self) -> tuple[str | None, Path | None]:
        """The resume token `stop` may return, and the file that must exist for the token to resume anything."""
        return None, None

    def info_fields(self) -> dict[str, Any]:
        """`info` fields after model, cli_version and transcript_path."""
        return {"observing": self.engine.turn is not None}

    # ------------------------------------------------------------------------------------------ lifecycle
    async def startup(self) -> dict[str, Any]:
        await self.engine.startup()
        return self.ready_fields()

    async def read_once_painted(self, read: Callable[[], _T | None], wait: float = FOOTER_WAIT) -> _T | None:
        """`read()` of what an idle screen shows a render after its input box (a footer's model, for `ready`):
        TUIs paint it in a later frame, seen over half a second late on a busy machine. Waits for it at most
        `wait`, only while the screen reads idle (a dialog has no footer) and still draws: a footer that settings
        hide, or a layout the rules do not read, never comes, so FOOTER_QUIET without output ends the wait. With
        `create.model` given, that is what `ready` names: no wait."""
        engine = self.engine
        end = engine.now() + wait
        value = read()
        if self.model:
            return value
        while (
            value is None
            and not engine.exited
            and engine.now() < end
            and engine.quiet_for() < FOOTER_QUIET
            and engine.reading().state == "idle"
        ):
            await engine.wait_change(min(end - engine.now(), FOOTER_QUIET - engine.quiet_for()))
            value = read()
        return value

    # ------------------------------------------------------------------------------------------ events in
    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        self.engine.on_screen(changed_rows)

    def on_status(self, fields: dict[str, Any]) -> None:
        self.engine.on_status(fields)

    def on_exit(self, exit_code: int | None) -> None:
        self.engine.on_exit(exit_code)

    # ------------------------------------------------------------------------------------------ input
    def can_accept_input(self) -> bool:
        return self.engine.can_accept_input()

    def hold_reason(self) -> str | None:
        return self.engine.hold_reason()

    async def submit(self, text: str) -> None:
        await self.engine.submit(text)

    def keys(self, data: bytes) -> None:
        self.engine.on_keys(data)
        self.host.write(data)

    def on_user_input(self, data: bytes) -> None:
        self.engine.on_keys(data)  # an interrupt key typed through attach interrupts the running turn

    def interrupt(self) -> None:
        self.engine.interrupt()

    def give_up_interrupt(self) -> bool:
        return self.engine.interrupted()

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any]:
        return await self.engine.answer(question_id, digit, option, text)

    # ------------------------------------------------------------------------------------------ hooks
    def input_live(self) -> bool:
        """The CLI enables bracketed paste once its prompt takes input; a message pasted before is lost."""
        try:
            return bool(self.host.terminal.bracketed_paste)
        except Exception:  # a terminal without modes: do not block on it
            return True

    # ------------------------------------------------------------------------------------------ stop/info
    async def stop(self, store_resume: bool) -> str | None:
        if not store_resume:
            return None
        token, record = self.resume_record()
        return token if token and record is not None and record.exists() else None

    def info(self) -> dict[str, Any]:
        path = self.transcript_path()
        return {
            "model": self.reported_model(),
            "cli_version": self.cli_version,
            "transcript_path": str(path) if path else None,
            **self.info_fields(),
        }
