"""The driver contract: what a CLI-specific driver provides and what the session (its host) gives it.

A driver turns one CLI's output (screen rows, OSC 7501 status, raw bytes or pipe bytes) into state,
response text, tools and questions, and turns sends/answers into keystrokes. It never touches the socket,
turn ids, the FIFO queue, message-id de-duplication or the one-terminal-event-per-turn rule: the session
(`litbridge.session.Session`, the `DriverHost`) owns those.

Lifecycle, as the session drives it:
  1. `Driver(host, options)`; `options` = the validated `create` command (session, channel_id, cli, args,
     working_dir (always set; default $HOME), env, model, plus any extra fields the client sent, e.g.
     `preapprove`) and `resume`: the token an earlier `stop(store_resume=True)` returned for this key, or None.
  2. `await prepare()` (the daemon's create; optional, default none): slow look-ups the launch needs, off the
     loop's critical path (e.g. `<binary> --version` to pick the rules: `drivers/versions.detect_version`).
     Then `launch()` -> LaunchSpec (synchronous, quick). The session resolves argv[0] on PATH (missing -> `cli_not_found`), drops the
     inherited vars `spec.env_remove` names, applies TERM/COLORTERM then `spec.env`, spawns.
  3. `await startup()` -> {"model": str|None, "resumed": bool, ...}: handle startup dialogs until input is
     live; raise DriverError on failure/timeout. The session then emits `ready` and starts dispatching.
  4. Events in, all on the event loop: `on_output(bytes)` for every raw chunk (PTY or the pipes' stdout),
     then, coalesced per loop tick or at the end of a synchronized frame, `on_screen(changed_rows)`;
     `on_status(fields)` for each OSC 7501 report. For `transport="pipes"`, `on_stderr(bytes)` too.
  5. Turns: the session calls `can_accept_input()` before dispatching a queued send; when True it sets the
     turn id (`host.turn_id`), forces state `thinking` and awaits `submit(text)`. The driver reports the
     turn through `host.turn_text/turn_thinking/tool_use/tool_result` and ends it with exactly one of
     `host.turn_complete/turn_interrupted/turn_error` (extra calls are ignored by the session). When input
     becomes live again after being blocked (dialog closed, spinner gone) call `host.input_ready()`.
  6. `input(text)` (type + Enter, no observing), `keys(data)` (raw key bytes), `interrupt()`,
     `await answer(...)`.
  7. `on_exit(exit_code)` when the process is gone by itself (the session then ends the open turn with
     `turn_error{kind:"cli_exited"}`, orphans questions and emits `exited`); `await stop(store_resume)`
     before a kill: return a resume token (e.g. Claude's session id) or None.
"""

from __future__ import annotations

import asyncio
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from litbridge.errors import DriverError  # the contract's; defined below the turn desk (it catches it)
from litbridge.timers import Cancellable

if TYPE_CHECKING:
    from litbridge.turns import TurnDesk

Transport = Literal["pty", "pipes"]


_FRAME = "".join(chr(c) for c in range(0x2500, 0x25A0))  # box drawing + block elements (banners, frames)
_WORD = re.compile(r"[^\W\d_]{2,}")


def meaningful_lines(rows: Iterable[str], keep: int = 4) -> str:
    """The last `keep` rows that say something, for an error about a CLI that exited: frame and block
    characters are stripped from both ends, and rows with no word (blank, box drawing, ASCII-art banners,
    whose few letters are lost among the art) are dropped. Lines joined with newlines."""
    out = []
    for row in rows:
        line = " ".join(row.strip().strip(_FRAME + " ").split())
        letters = sum(ch.isalpha() for ch in line)
        if _WORD.search(line) and letters * 3 >= len(line.replace(" ", "")):
            out.append(line)
    return "\n".join(out[-keep:])


@dataclass
class LaunchSpec:
    """How to start the CLI. `env` holds only the driver's additions. The session builds the child env as:
    the daemon's env minus `env_remove`, then TERM/COLORTERM, then `env`, then the caller's `create.env`
    (so the caller always wins). `cwd` None means `options["working_dir"]`.

    transport "pty": a 200x50 PTY in its own session/process group; "pipes": stdin/stdout/stderr pipes in
    its own process group (the driver renders a readable transcript into `host.terminal` itself).
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    transport: Transport = "pty"
    env_remove: list[str] = field(default_factory=list)
    """Inherited variables the child must not see: names, or prefixes ending in `*` (e.g. Claude's own
    CLAUDECODE / CLAUDE_CODE_* when the daemon runs under Claude Code). `env` and `create.env` still apply."""


@runtime_checkable
class DriverHost(Protocol):
    """What the session gives a driver. Every method is safe to call from the event loop only."""

    key: str
    """The session key (`session` or `session:channel_id`)."""
    terminal: Any
    """`litbridge.term.Terminal` (200x50). For pipes drivers: feed readable text into it for dump/attach."""
    loop: asyncio.AbstractEventLoop

    @property
    def log(self) -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
        """The session's logger (the session's is an adapter that prefixes the session key)."""
        ...

    last_output_at: float
    """`loop.time()` of the most recent output chunk (0.0 before any)."""
    spawned_at: float
    """`loop.time()` of the spawn."""
    state: str
    """The current state as last set (`starting idle thinking responding dialog dead`)."""

    @property
    def turn_id(self) -> str | None:
        """The open turn's id, or None between turns (read-only: the session owns turn ids)."""
        ...

    turns: TurnDesk
    """The session's turn desk (`litbridge.turns`), the one owner of turn state; the engine reads its turn there."""

    pid: int | None

    def write(self, data: bytes) -> None:
        """Bytes to the CLI (PTY master or stdin pipe); non-blocking, queued in order."""

    def close_stdin(self) -> None:
        """EOF on the child's stdin once queued writes are flushed (pipes transport; no-op for a PTY)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancellable:
        """A timer that is cancelled automatically when the session dies. It fires at the end of its deadline's
        slot of the loop's timer grid (up to `litbridge.timers.GRID` late): for settles and ticks, not exact times."""

    def set_state(self, state: str) -> None:
        """Emit `state{from,to}` if it changed."""

    def turn_text(self, text: str) -> None:
        """`replace{text,turn_id}` for the open turn (deduplicated; ignored with no open turn)."""

    def turn_thinking(self, text: str) -> None:
        """`thinking{text}` (deduplicated)."""

    def reasoning(self, text: str) -> None:
        """`reasoning{text,turn_id}`: a reasoning block of the open turn, read from the CLI's transcript."""

    def tool_use(self, tool_use_id: str, name: str, input: Any) -> None: ...

    def tool_result(self, tool_use_id: str, content: str, is_error: bool = False) -> None: ...

    def turn_complete(
        self,
        content: str,
        usage: dict[str, int] | None = None,
        source: str = "screen",
        exit_code: int | None = None,
    ) -> None:
        """End the open turn normally (`complete`; source transcript, screen or quiescence; a shell command's
        `exit_code` when known)."""

    def turn_interrupted(self, content: str = "") -> None:
        """End the open turn as `interrupted`."""

    def interrupt_noted(self) -> None:
        """An interrupt of the open turn is under way, whatever started it (the `interrupt` command, keys typed
        through attach, the CLI's own cancel): the session ends the turn `interrupted` itself if the driver has
        not ended it within its fallback time (a hung CLI must not hold the turn and the queue behind it)."""

    def turn_error(self, message: str, kind: str = "api_error", detail: str | None = None) -> None:
        """End the open turn as `turn_error` (kind: api_error, cli_exited, timeout; `detail`: what the CLI
        showed, when the driver knows)."""

    def open_question(
        self,
        kind: str,
        text: str,
        options: list[dict[str, Any]],
        detail: Any = None,
        source: str | None = None,
    ) -> str:
        """Emit `question`; returns its daemon-unique id. Orphaned automatically when the turn ends."""

    def close_question(self, question_id: str, reason: str = "answered") -> None:
        """Emit `question_closed` once (later calls for the same id are ignored)."""

    def open_questions(self) -> list[str]:
        """Ids of questions not yet closed, oldest first."""

    def input_ready(self) -> None:
        """Input is live again: the session may dispatch the next queued send."""

    def begin_organic_turn(self, text: str) -> str | None:
        """A prompt typed into the CLI itself (attach) starts a turn: `accepted{organic:true}` with a new turn
        id (returned), ended by the usual turn_complete/turn_interrupted/turn_error. None if a turn is open."""

    def emit(self, event: str, **fields: Any) -> None:
        """Any other spec event for this session (e.g. `dialog_dismissed`, `unknown_dialog`)."""


class Driver(ABC):
    """Base class of every driver. Subclasses set `name` and implement `launch` (and usually the rest)."""

    name: str = "base"
    markdown: bool = False
    """The CLI answers in markdown: `ready.markdown` and the `list` item tell clients to render `complete.content`
    as markdown (the AI CLIs); False for a shell or REPL, whose output is shown as it is."""

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        self.host = host
        self.options = options

    # -- launch / lifecycle --------------------------------------------------------------------------
    async def prepare(self) -> None:
        """Before `launch()`, awaited on the event loop: anything slow the launch needs (never blocking)."""
        return None

    @abstractmethod
    def launch(self) -> LaunchSpec:
        """argv/env/cwd/transport for the CLI."""

    async def startup(self) -> dict[str, Any]:
        """Wait until input is live (handling startup dialogs). Returns {"model", "resumed", ...}."""
        return {"model": self.options.get("model"), "resumed": False}

    def on_exit(self, exit_code: int | None) -> None:
        """The CLI exited by itself (the session emits the events)."""
        return None

    async def stop(self, store_resume: bool) -> str | None:
        """Called before a kill; return a resume token when `store_resume` (None if there is none)."""
        return None

    # -- events in -----------------------------------------------------------------------------------
    def on_output(self, data: bytes) -> None:
        """Every raw output chunk, before the screen is evaluated."""
        return None

    def on_stderr(self, data: bytes) -> None:
        """pipes transport only: stderr bytes (the session also keeps a tail for `exited`)."""
        return None

    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        """Rows (y, text) whose text changed since the last call; never called with an empty list."""
        return None

    def on_status(self, fields: dict[str, Any]) -> None:
        """An OSC 7501 program-status report, read by `drivers/osc7501.parse` (msg/title decoded)."""
        return None

    # -- input ---------------------------------------------------------------------------------------
    def can_accept_input(self) -> bool:
        """True when a send may be typed now (prompt live, no dialog, no spinner)."""
        return True

    def hold_reason(self) -> str | None:
        """Why a send cannot be typed now (for `dialog_blocked` when one is held), e.g. "question q3 is open"."""
        return None

    def validate_send(self, text: str) -> None:
        """Reject a send before it is accepted (raise DriverError, e.g. bad_field); default: accept all."""
        return None

    @abstractmethod
    async def submit(self, text: str) -> None:
        """Type and submit `text` as the open turn (`host.turn_id` is set)."""

    def input(self, text: str) -> None:
        """Type text + Enter without observing."""
        self.host.write(text.encode("utf-8") + b"\r")

    def keys(self, data: bytes) -> None:
        """Raw key bytes from `keystroke` (already encoded by `litbridge.keys`)."""
        self.host.write(data)

    def on_user_input(self, data: bytes) -> None:
        """Bytes a user typed straight into the CLI (attach), just before they are written: e.g. an Esc that
        interrupts the running turn. Observe only; the session writes them."""
        return None

    def interrupt(self) -> None:
        """Interrupt the open turn; the driver (or this default) ends it with `turn_interrupted`."""
        self.host.write(b"\x1b")

    def give_up_interrupt(self) -> bool:
        """The CLI did not honour an interrupt in time and the session ends the turn: end it the driver's way
        (`state` settled first, its own bookkeeping closed) and say True; False leaves it to the session."""
        return False

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> dict[str, Any] | None:
        """Answer an open question; raise DriverError("no_question", ...) when none is waiting. May return
        {"question_id", "digit"} of what it answered (echoed in `answer_sent` for answers by option or text)."""
        raise DriverError("no_question", "no dialog is waiting on this session")

    # -- reporting -----------------------------------------------------------------------------------
    @classmethod
    def install_hint(cls) -> str | None:
        """How to install the CLI (`cli_not_found` says it), None when the driver does not know."""
        return None

    def info(self) -> dict[str, Any]:
        """Extra fields for `list` items and `dump`: e.g. model, cli_version, transcript_path, count, observing."""
        return {}
