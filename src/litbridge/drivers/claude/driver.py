"""The Claude Code driver: Claude knowledge plugged into the shared turn engine (`drivers/engine.py`).

What is Claude's here: the launch line (`launch.py`), the versioned screen rules (`versions.py` picks a
`v2_1.Rules`-like class from `claude --version` before the first frame), the JSONL transcript that ends turns
(`transcript.py`, followed by `follow.py` on the shared `drivers/records` pipeline), bracketed paste, and a slower screen fallback. Everything about
settling, questions, submit verification, interrupts and state is the engine's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverError, DriverHost, LaunchSpec
from litbridge.drivers.claude import launch as launchmod
from litbridge.drivers.claude.follow import TranscriptFollower
from litbridge.drivers.claude.model import ScreenState
from litbridge.drivers.claude.transcript import last_model, project_dir, project_slug
from litbridge.drivers.claude.versions import CLI, LOGO_VERSION_RE
from litbridge.drivers.engine import Timing, Turn, holds_prompt
from litbridge.drivers.engine_driver import EngineDriver
from litbridge.drivers.paste import paste_payload
from litbridge.drivers.records import Dispatch
from litbridge.drivers.screen_ops import strip_rows
from litbridge.drivers.versions import recorded_version
from litbridge.keys import encode_key

ENTER, ESC, CTRL_C = encode_key("Enter"), encode_key("Esc"), encode_key("C-c")

TIMING = Timing(
    settle=0.15,
    dialog_quiet=0.5,
    key_quiet=0.2,
    enter_gap=0.12,
    submit_timeout=15.0,
    interrupt_grace=0.5,
    status_stale=3.0,
    ready_stable=0.3,
    ready_stable_status=0.05,
)
"""Claude Code 2.1's clocks (reference §5: keys in the first ~150 ms after a dialog paints can be lost)."""
STARTUP_TIMEOUT = 60.0  # module-level: read at each driver's creation (the fault tests lower it)
FALLBACK_QUIET = 8.0  # screen fallback: idle + completion line + silent transcript for this long
FALLBACK_MIN_TURN = 2.0
INTERRUPT_TRANSCRIPT_QUIET = 0.3  # an interrupt ends from the screen only once the transcript had its say


class _Dispatch(Dispatch):
    """Claude's answer streams off the screen (the transcript's text blocks come whole, late); the screen is read
    at once when the prompt lands."""

    exact_final = False
    stream_on_prompt = True


class ClaudeDriver(EngineDriver):
    """Claude Code (2.1.x) under a 200x50 PTY."""

    name = "claude"
    CLI = CLI
    tick_idle_only = True  # `on_tick`'s fallback reads an idle screen only

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options, Timing(**{**vars(TIMING), "startup_timeout": STARTUP_TIMEOUT}))
        self.launch_session_id: str | None = None  # the launch plan's; the follower's once it exists
        self.follower: TranscriptFollower | None = None

    @property
    def session_id(self) -> str | None:
        """The conversation this session is in now: the transcript follower's (a `/clear` rolls it to a new file,
        `--continue` finds it after the spawn), else the one the launch pinned."""
        return self.follower.session_id if self.follower is not None else self.launch_session_id

    # ------------------------------------------------------------------------------------------ launch
    def launch(self) -> LaunchSpec:
        spec = super().launch()  # launch.Launch: argv, session pinning, preapproval
        self.follower = TranscriptFollower(
            self.host,
            project_dir(self.cwd, self.env),
            self.cwd,
            self.session_id,
            self.resumed,
            self.record.tracker(),
            _Dispatch(self.engine, self.host),
        )
        return spec

    async def startup(self) -> dict[str, Any]:
        if self.follower is not None:
            self.follower.start(self.engine)
        try:
            await self.engine.startup()
        except Exception:
            if self.engine.exited:
                raise DriverError(
                    "spawn_failed",
                    f"claude exited during startup (code {self.engine.exit_code}): {self.screen_excerpt()}",
                ) from None
            raise
        version, model = self.rules.header_info(self._rows())
        self.cli_version = self.cli_version or version
        if model and not self.model:
            self.model = model
        if not self.model and self.resumed:
            self.model = last_model(self.transcript_path())  # the logo scrolled away behind the history
        return self.ready_fields()

    # ------------------------------------------------------------------------------------------ events in
    def on_exit(self, exit_code: int | None) -> None:
        super().on_exit(exit_code)
        if self.follower is not None:
            self.follower.close()

    # ------------------------------------------------------------------------------------------ input
    def input(self, text: str) -> None:
        """Type `text` + Enter without observing (slash commands); Enter is its own write, as for `send`."""
        payload = paste_payload(text)
        long = "\n" in text or len(text) > 100
        if long:
            self.write_paste(payload)
        else:
            self.host.write(payload)
        self.host.call_later(self.engine.timing.enter_gap, lambda: self.host.write(ENTER))

    # ------------------------------------------------------------------------------------------ stop/info
    def transcript_path(self) -> Path | None:
        return self.follower.tailer.path if self.follower is not None else None

    def resume_record(self) -> tuple[str | None, Path | None]:
        return self.session_id, self.transcript_path()

    def info_fields(self) -> dict[str, Any]:
        eng = self.engine
        return {
            "claude_session_id": self.session_id,
            "osc_state": (eng.status or {}).get("state"),
            **super().info_fields(),
            "screen_state": eng.screen.state if eng.screen is not None else "blank",
        }

    # ------------------------------------------------------------------------------------------ replay
    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """For `litbridge replay`: a private config dir, the recorded session id pinned as the live launch would
        (unless the recording pinned or resumed one), the version the recorded logo printed, and the project
        folder the recorded transcript lines go to (the recorded one, else the slug of the recorded cwd)."""
        cfg = home / ".claude"
        args = list(capture.args)
        sid = Path(capture.transcript[0][1]).stem if capture.transcript else None  # <session id>.jsonl
        if sid and "--session-id" not in args and not any(a in launchmod.RESUME_FLAGS for a in args):
            args += ["--session-id", sid]
        slug = None
        for folder in capture.transcript_dirs.values():  # transcripts/<slug>/<id>.jsonl: the last one wins
            if len(Path(folder).parts) == 1:
                slug = folder
        version = recorded_version(capture.chunks, LOGO_VERSION_RE)
        options = {
            "args": args,
            "env": {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(cfg)},
            "cli_version": version,
        }
        return options, cfg / "projects" / (slug or project_slug(capture.cwd))

    # ------------------------------------------------------------------------------------------ EngineHooks
    def _rows(self) -> list[str]:
        return self.host.terminal.display

    def read_screen(self) -> ScreenState:
        cls = self.rules.classify(self._rows())
        if self.cli_version is None and cls.version:
            # `claude --version` could not be read: the logo's version picks the rules from now on
            self.use_version(cls.version)
            cls = self.rules.classify(self._rows())
        if cls.version and not self.model:
            # the logo names the model; a resumed conversation taller than the screen scrolls it away before
            # startup ends, and `--resume`'s picker draws it only once an entry is picked: take it when it shows
            self.model = self.rules.header_info(self._rows())[1]
        return cls

    def dialog_keys(self, dialog: Any, index: int) -> list[str]:
        return self.rules.cursor_keys(dialog, index)

    def unknown_modal(self) -> str | None:
        return self.rules.modal_excerpt(self._rows())

    def type_message(self, text: str) -> None:
        self.write_paste(paste_payload(text))

    def submit_key(self) -> bytes:
        return ENTER

    def interrupt_key(self) -> bytes:
        return ESC

    def interrupt_settled(self, turn: Turn) -> bool:
        """The transcript's own interrupt record (it carries the partial text) gets a moment to land first."""
        return self.follower is None or self.follower.quiet_for(turn.started) >= INTERRUPT_TRANSCRIPT_QUIET

    def clear_keys(self) -> tuple[bytes, ...]:
        return (CTRL_C,)  # Esc before the first token puts the prompt back; Ctrl+C empties a non-empty box

    def response_text(self, turn: Turn, reading: Any) -> str | None:
        if not turn.witnessed:
            return None
        rows = self.host.terminal.logical_lines()
        needle = turn.text if len(turn.text) < 800 and turn.text.count("\n") < 8 else None
        start = self.rules.find_turn_start(rows, needle)
        if start is not None:
            turn.data["prompt_seen"] = True
        elif not turn.data.get("prompt_seen"):
            return None
        elif not turn.last_text and (
            getattr(reading, "state", "") != "busy" or holds_prompt(getattr(reading, "draft", ""), turn.text)
        ):
            # Esc before the first token took the prompt row off the screen (back into the input box): what is
            # left above is the previous answer (taller than the screen, so no logo marks it), not this turn's
            return None
        text = self.rules.extract_response(rows, start)
        if start is None and turn.last_text:
            # the prompt scrolled off: the screen shows a window of the answer; extend what we had with it
            text = stitch(turn.last_text, text)
        return text

    def on_tick(self, turn: Turn) -> None:
        """The screen fallback when the transcript is silent: an idle screen with Claude's completion line
        below the turn's prompt, quiet for FALLBACK_QUIET."""
        eng = self.engine
        if self.follower is None or not eng.cli_idle() or not (turn.witnessed or turn.went_busy):
            return
        now = eng.now()
        quiet = self.follower.quiet_for(turn.started)
        if (
            now - turn.started >= FALLBACK_MIN_TURN
            and now - eng.last_change >= FALLBACK_QUIET
            and quiet >= FALLBACK_QUIET
            and (not self.follower.tracker.open or quiet >= 60.0)
            and self._completion_below_prompt(turn)
        ):
            rows = self.host.terminal.logical_lines()
            start = self.rules.find_turn_start(rows, turn.text if len(turn.text) < 800 else None)
            eng.complete(self.rules.extract_response(rows, start) or turn.last_text, None, "screen")

    def _completion_below_prompt(self, turn: Turn) -> bool:
        rows = strip_rows(self._rows())
        start = self.rules.find_turn_start(rows, turn.text if len(turn.text) < 800 else None)
        return any(self.rules.COMPLETION_RE.match(r) for r in rows[0 if start is None else start + 1 :])


def stitch(old: str, window: str) -> str:
    """`old` extended by a later screen `window` of the same answer (its top may be cut mid-paragraph).

    Anchors on one of the window's first lines found at a line start in `old` where the rest of `old` is a
    prefix of the window from there; without an anchor the window alone is returned.
    """
    if not old or window.startswith(old):
        return window
    lines = window.split("\n")
    last_start = old.rfind("\n") + 1
    partial = old[last_start:]
    offset = 0
    for i, line in enumerate(lines[:6]):
        if i:
            offset += len(lines[i - 1]) + 1
        if len(line.strip()) < 8:
            continue
        tail = window[offset:]
        if len(partial.strip()) >= 20 and line.startswith(partial):
            return old[:last_start] + tail  # the old window ended inside this line
        pos = old.rfind("\n" + line)
        pos = pos + 1 if pos >= 0 else (0 if old.startswith(line) else -1)
        while pos >= 0:
            rest = old[pos:]
            # the old window's last line may have been caught half-drawn: it need not match
            if tail.startswith(rest) or ("\n" in rest and tail.startswith(rest.rsplit("\n", 1)[0])):
                return old[:pos] + tail
            nxt = old.rfind("\n" + line, 0, max(pos - 1, 0))
            pos = nxt + 1 if nxt >= 0 else -1
    return window


if TYPE_CHECKING:
    _LAUNCH_HOST: type[launchmod.LaunchHost] = ClaudeDriver  # what the launch plug-ins read and set is here
