"""One session: the CLI process -> Terminal -> driver wiring, and its lifecycle (spawn, start-up, death).

Its turns (ids, the FIFO send queue, message-id de-duplication, one terminal event per turn, questions) are
its `TurnDesk` (`litbridge.turns`), the one owner of turn state, which the engine reads too. It is the
`DriverHost` of `drivers/base.py`: the turn calls are handed to the desk. It emits event dicts (built by
`protocol.events`) through a callback and knows nothing of sockets or the wire format.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from litbridge import pty as ptymod
from litbridge.drivers import get_driver, osc7501
from litbridge.drivers.base import Driver, DriverError, meaningful_lines
from litbridge.keys import encode_keys
from litbridge.protocol import events as ev
from litbridge.protocol.spec import DEFAULT_CLI
from litbridge.term import Terminal
from litbridge.timers import Timer, Timers
from litbridge.turns import HOLD_LIMIT, INTERRUPT_FALLBACK, TurnDesk

log = logging.getLogger(__name__)

__all__ = ["HOLD_LIMIT", "INTERRUPT_FALLBACK", "Session", "SessionCommandError", "log_safe"]

Emit = Callable[[dict[str, Any]], None]

SYNC_FRAME_FALLBACK = 0.25  # seconds: evaluate anyway if a synchronized frame never ends
_DIALOG_EVENTS = frozenset(
    {"dialog_dismissed", "dialog_cleared", "dialog_blocked", "dialog_released", "unknown_dialog"}
)
PATH_SHOWN = 240  # characters of a PATH an error message shows


FOCUS_IN, FOCUS_OUT = b"\x1b[I", b"\x1b[O"
"""The focus events a terminal sends while focus reporting (DECSET 1004) is on."""
FOCUS_OUT_AGAIN = 0.3
"""Seconds after the daemon's own keys (a send, an answer) that an unattended session says focus-out again: a
CLI may take any key as the user being back (Qwen Code does)."""


def _short_path(path: str) -> str:
    """`path` for a message: whole when short, else its first entries and how many more."""
    if len(path) <= PATH_SHOWN:
        return path
    dirs = path.split(os.pathsep)
    shown: list[str] = []
    for d in dirs:
        if len(os.pathsep.join([*shown, d])) > PATH_SHOWN - 20:
            break
        shown.append(d)
    return os.pathsep.join(shown) + f"{os.pathsep}… ({len(dirs) - len(shown)} more)"


class _KeyLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Prefixes the session key; one module logger for all sessions (a Logger per key would never be freed)."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        # The key is client-chosen: escaped, so a newline or ESC in it cannot forge or garble log lines.
        return f"[{log_safe(self.extra['session'])}] {msg}", kwargs  # type: ignore[index]


def log_safe(text: Any) -> str:
    """A client-chosen string for a log line: repr-escaped (newlines, ESC and other non-printables)."""
    return repr(str(text))[1:-1]


_background: set[asyncio.Task[Any]] = set()


class SessionCommandError(Exception):
    """A command on this session failed; the daemon turns it into `error{code,message,re}`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class _TeeTerminal:
    """For pipes drivers: the Terminal they render into, teeing fed bytes to attach viewers."""

    def __init__(self, term: Any, session: Session) -> None:
        self._term, self._session = term, session

    def feed(self, data: bytes) -> None:
        self._term.feed(data)
        self._session._tee(data)
        self._session._schedule_eval()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._term, name)


class Session:
    """A CLI under a PTY (or pipes) driven by a driver; see the module docstring."""

    def __init__(
        self,
        key: str,
        options: dict[str, Any],
        emit: Emit,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        on_dead: Callable[[Session], None] | None = None,
        kill_grace: float = 2.0,
        child_factory: Callable[[list[str], dict[str, str], str, str], Any] | None = None,
        cli_nice: int = 0,
    ) -> None:
        """`child_factory(argv, env, cwd, transport)` replaces the real spawn (replay's recorded child); the
        program is then not looked up on PATH. `cli_nice`: the CLI runs that many nice levels below the
        daemon (`serve --cli-nice`; Unix)."""
        self.key = key
        self.name: str = options.get("session", key)
        self.channel_id: str | None = options.get("channel_id")
        self.options = options
        self.cli_nice = cli_nice
        self.cli: str = options.get("cli") or DEFAULT_CLI
        self._emit_cb = emit
        self.loop = loop or asyncio.get_running_loop()
        self.log: logging.LoggerAdapter[logging.Logger] = _KeyLog(log, {"session": key})
        self._on_dead = on_dead
        self.kill_grace = kill_grace
        self._child_factory = child_factory
        self.state = "starting"
        self.model: str | None = options.get("model")
        self.resumed = False
        self.started = False  # startup() finished (successfully or not)
        self.ready = False
        self.dead = False
        self.exit_code: int | None = None
        self.killing = False
        self.pid: int | None = None
        self.last_output_at = 0.0
        self.spawned_at = 0.0
        self.created_wall = time.time()
        # armed through call_later and not yet fired nor cancelled: cancelled when the CLI dies
        self._timers: set[Timer] = set()
        self._loop_timers = Timers.for_loop(self.loop)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._eval_pending = False
        self._feeding = False
        self._sync_timer: Timer | None = None
        self._stderr_tail = bytearray()
        self._output_listeners: list[Callable[[bytes | None], None]] = []
        self._startup_task: asyncio.Task[Any] | None = None
        self._create_re: Any = None
        self._create_answered = False  # the create got its one reply (`ready` or `error`)
        self.child: ptymod.ChildProcess | None = None
        self._spawning: asyncio.Future[ptymod.ChildProcess] | None = None  # spawn_async's fork in a worker
        self._early_writes: list[bytes] = []  # written while _spawning, flushed to the child when attached
        self.program_status: dict[str, str] | None = None  # the last OSC 7501 report, read
        self.worktree: Any = None  # the daemon's `worktrees.Worktree` when the CLI runs in one
        self.focused = False  # an attach controller is attached: the CLI's terminal has the user's focus
        self._focus_reporting = False  # the CLI enabled focus reporting (DECSET 1004)
        self._focus_out_timer: Timer | None = None
        self._real_terminal = Terminal(
            ptymod.COLUMNS,
            ptymod.LINES,
            on_reply=self._on_reply,
            on_status=self._on_status,
            on_frame_end=self._schedule_eval,
        )
        self.terminal: Any = self._real_terminal
        self.turns = TurnDesk(self, lambda event: self._emit(event))
        self.driver: Driver = get_driver(self.cli)(self, options)
        self.transport = "pty"

    # ------------------------------------------------------------------ lifecycle
    def spawn(self) -> None:
        """Launch the CLI now, blocking the caller for the fork + exec handshake (tests, tools).
        Raises SessionCommandError(cli_not_found | spawn_failed | bad_field)."""
        argv, env, cwd, transport = self._prepare_spawn()
        try:
            if self._child_factory is not None:
                child = self._child_factory(argv, env, cwd, transport)
            else:
                child = ptymod.spawn(argv, env, cwd, transport, nice=self.cli_nice)
        except ptymod.SpawnError as exc:
            raise SessionCommandError("spawn_failed", str(exc)) from exc
        self._attach_child(child, argv[0], cwd)

    async def spawn_async(self) -> None:
        """`spawn` with the fork + exec handshake (~40 ms, longer as the daemon grows) in a spawn thread
        (`pty.spawn_executor`, not the loop's default executor), so the loop keeps serving other sessions
        during a burst of creates. The child's fds are registered with the loop back on the loop thread, by a
        done-callback that runs whoever awaits (or stops awaiting): a create cancelled mid-spawn still leaves an
        attached child that `kill` can reap, never an orphan."""
        await self.driver.prepare()  # e.g. `<cli> --version`, in a worker thread
        argv, env, cwd, transport = self._prepare_spawn()
        fut = self.loop.run_in_executor(
            ptymod.spawn_executor(),
            functools.partial(ptymod.spawn, argv, env, cwd, transport, nice=self.cli_nice),
        )

        def attach(f: asyncio.Future[ptymod.ChildProcess]) -> None:
            if not f.cancelled() and f.exception() is None:
                self._attach_child(f.result(), argv[0], cwd)

        fut.add_done_callback(attach)  # registered first: runs before any awaiter resumes
        self._spawning = fut
        try:
            await asyncio.shield(fut)
        except ptymod.SpawnError as exc:
            raise SessionCommandError("spawn_failed", str(exc)) from exc
        finally:
            if fut.done():
                self._spawning = None

    def _prepare_spawn(self) -> tuple[list[str], dict[str, str], str, str]:
        """Everything before the fork: the driver's launch spec, env, argument checks, the resolved program."""
        try:
            spec = self.driver.launch()
        except DriverError as exc:
            raise SessionCommandError(exc.code, exc.message) from exc
        self.transport = spec.transport
        env = ptymod.child_env(spec.env, self.options.get("env") or {}, remove=spec.env_remove)
        if not spec.argv:
            raise SessionCommandError("spawn_failed", "driver produced an empty argv")
        try:
            ptymod.check_exec_args(spec.argv, env, spec.cwd or self.options.get("working_dir"))
        except ValueError as exc:
            raise SessionCommandError("bad_field", str(exc)) from exc
        exe = ptymod.resolve(spec.argv[0], env) if self._child_factory is None else spec.argv[0]
        if exe is None:
            raise SessionCommandError("cli_not_found", self._not_found(spec.argv[0], env))
        cwd = spec.cwd or self.options.get("working_dir") or os.path.expanduser("~")
        if spec.transport == "pipes":
            self.terminal = _TeeTerminal(self._real_terminal, self)
        return [exe, *spec.argv[1:]], env, cwd, spec.transport

    def _not_found(self, program: str, env: dict[str, str]) -> str:
        """`cli_not_found`'s message: where the program was looked for and how to get it."""
        if os.sep in program:
            where = "no executable file there"
        else:
            whose = "create.env's" if "PATH" in (self.options.get("env") or {}) else "the daemon's"
            where = f"searched {whose} PATH: {_short_path(env.get('PATH', os.defpath))}"
        how = self.driver.install_hint()
        fix = f"install it with `{how}`, or " if how else ""
        return (
            f"CLI not found: {program} ({where}); {fix}give its full path as the CLI, or start "
            "`litbridge serve` with its directory on PATH"
        )

    def _attach_child(self, child: ptymod.ChildProcess, exe: str, cwd: str) -> None:
        """On the loop thread: start event-driven reads and exit watching for a freshly spawned child."""
        self.child = child
        self.pid = child.pid
        self.spawned_at = self.loop.time()
        self.log.info("spawned %r pid %d (%s) in %r", os.path.basename(exe), self.pid, self.transport, cwd)
        child.start(
            self.loop,
            self._on_output if self.transport == "pty" else self._on_pipe_output,
            self._on_exit,
            self._on_stderr,
        )
        early, self._early_writes = self._early_writes, []
        for data in early:
            child.write(data)

    def start(self, re: Any = None) -> None:
        """Run the driver's startup in the background; emits `ready` (or `error`) when done."""
        self._create_re = re
        self._startup_task = self._spawn_task(self._run_startup(re))

    def _spawn_task(self, coro: Any) -> asyncio.Task[Any]:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run_startup(self, re: Any) -> None:
        try:
            result = await self.driver.startup()
        except asyncio.CancelledError:
            raise
        except DriverError as exc:
            self._startup_failed(ev.error(exc.message, exc.code, re, self.key, self.channel_id))
            return
        except Exception as exc:
            self.log.exception("driver startup failed")
            self._startup_failed(
                ev.error(f"startup failed: {exc}", "internal", re, self.key, self.channel_id)
            )
            return
        if self.dead:
            return
        result = result or {}
        self.model = result.get("model", self.model)
        self.resumed = bool(result.get("resumed", False))
        self.started = self.ready = True
        self._answer_create(
            ev.ready(
                self.key,
                self.channel_id,
                model=self.model,
                resumed=self.resumed,
                re=re,
                state=self.state,
                **self.session_fields(),
            )
        )
        self.turns.schedule_pump()

    def _startup_failed(self, error: dict[str, Any]) -> None:
        """The create is answered with `error`; the CLI (never ready) is killed and reaped, so the key is dead
        and a later create re-creates it instead of "reusing" a CLI that never became ready."""
        self.started = True
        self._answer_create(error)
        if self.dead:
            return
        task = self.loop.create_task(self.kill())  # not in self._tasks: _on_exit must not cancel it
        _background.add(task)
        task.add_done_callback(_background.discard)

    def _answer_create(self, reply: dict[str, Any]) -> None:
        """The create's one reply: a CLI exiting during start-up is answered by the exit, and the driver's own
        start-up failure that may still follow (its task resumed before it saw the cancel) is not a second."""
        if not self._create_answered:
            self._create_answered = True
            self._emit(reply)

    async def kill(self, store_resume: bool = False) -> tuple[int | None, str | None]:
        """Stop the driver (resume token when asked), kill + reap the process group. -> (exit_code, token)."""
        token: str | None = None
        self.killing = True  # set first: a CLI that exits during a graceful stop() was still killed
        if self._spawning is not None:  # a create still forking: wait for the child, then kill it
            with contextlib.suppress(Exception):
                await asyncio.shield(self._spawning)
        if not self.dead:
            try:
                token = await asyncio.wait_for(self.driver.stop(store_resume), 10.0)
            except Exception as exc:
                self.log.warning("driver stop failed: %s", exc)
        if self.child is not None and not self.dead:
            await self.child.kill(self.kill_grace)
        if not self.dead:  # never spawned (or the exit callback did not run)
            self._on_exit(self.child.exit_code if self.child else None)
        return self.exit_code, token if store_resume else None

    # ------------------------------------------------------------------ I/O from the child
    def _on_output(self, data: bytes) -> None:
        self.last_output_at = self.loop.time()
        # a synchronized frame that ends inside this chunk is evaluated after it (below), not scheduled
        self._feeding = True
        try:
            self.terminal.feed(data)
        except Exception:  # an emulator bug must not cost the driver, the viewers or the session
            self.log.exception("terminal.feed")
        finally:
            self._feeding = False
        self._check_focus_reporting()
        try:
            self.driver.on_output(data)
        except Exception:
            self.log.exception("driver.on_output")
        self._tee(data)
        if self._eval_pending or not self._real_terminal.in_sync_frame:
            # at once: the loop reads a PTY once per iteration, so a later callback would coalesce nothing
            self._evaluate()
        else:
            self._schedule_eval()  # inside a frame: its end evaluates it, the fallback timer guards it

    def _check_focus_reporting(self) -> None:
        """A CLI that enables focus reporting (DECSET 1004) is told at once whether its terminal has focus: out
        while no attach controller is attached (some CLIs ring the bell or notify for an approval only when
        unfocused), in while one is; `set_focus` reports the changes after that, and while unattended the
        daemon's own keys are followed by focus-out again."""
        try:
            on = bool(self.terminal.focus_reporting)
        except Exception:  # an emulator without the mode: nothing to report
            return
        if on and not self._focus_reporting:
            self.write(FOCUS_IN if self.focused else FOCUS_OUT)
        self._focus_reporting = on

    def _focus_out_again(self) -> None:
        self._focus_out_timer = None
        if self._focus_reporting and not self.focused:
            self.write(FOCUS_OUT)

    def set_focus(self, focused: bool) -> None:
        """An attach controller came (True) or the last one went (False): a CLI with focus reporting on hears
        focus-in / focus-out (`CSI I` / `CSI O`)."""
        if focused != self.focused:
            self.focused = focused
            if self._focus_reporting:
                self.write(FOCUS_IN if focused else FOCUS_OUT)

    def _on_pipe_output(self, data: bytes) -> None:
        self.last_output_at = self.loop.time()
        try:
            self.driver.on_output(data)
        except Exception:
            self.log.exception("driver.on_output")
        self._schedule_eval()

    def _on_stderr(self, data: bytes) -> None:
        self._stderr_tail += data
        del self._stderr_tail[:-4000]
        try:
            self.driver.on_stderr(data)
        except Exception:
            self.log.exception("driver.on_stderr")

    def _tee(self, data: bytes) -> None:
        for cb in list(self._output_listeners):
            try:
                cb(data)
            except Exception:
                self.log.exception("output listener")

    def _on_reply(self, data: bytes) -> None:
        if self.child is not None and self.transport == "pty":
            self.child.write(data)

    def _on_status(self, payload: str) -> None:
        """An OSC 7501 payload from the terminal, read once (`drivers/osc7501`) and handed to the driver."""
        fields = osc7501.parse(payload)
        if fields is None:
            return
        self.program_status = fields
        try:
            self.driver.on_status(fields)
        except Exception:
            self.log.exception("driver.on_status")

    def _schedule_eval(self) -> None:
        if self._eval_pending or self.dead:
            return
        if self._feeding:  # a synchronized frame ended inside a chunk: `_on_output` evaluates after the chunk
            self._eval_pending = True
            return
        if self._real_terminal.in_sync_frame:
            # the frame's end (on_frame_end) schedules us; the timer only guards a frame that never ends
            if self._sync_timer is None:
                self._sync_timer = self.call_later(SYNC_FRAME_FALLBACK, self._sync_fallback)
            return
        self._eval_pending = True
        self.loop.call_soon(self._evaluate)

    def _sync_fallback(self) -> None:
        self._sync_timer = None
        if not self._eval_pending and not self.dead:
            self._eval_pending = True
            self._evaluate()

    def _evaluate(self) -> None:
        self._eval_pending = False
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        if self.dead:
            return
        rows = self._real_terminal.changed_rows()
        if rows:
            try:
                self.driver.on_screen(rows)
            except Exception:
                self.log.exception("driver.on_screen")
        self.turns.schedule_pump()

    def _on_exit(self, code: int | None) -> None:
        if self.dead:
            return
        self.dead = True
        self.exit_code = code
        if self._eval_pending or self._real_terminal is not None:
            with contextlib.suppress(Exception):
                rows = self._real_terminal.changed_rows()
                if rows:
                    self.driver.on_screen(rows)
        self.log.info("pid %s exited with %s%s", self.pid, code, " (killed)" if self.killing else "")
        # every pending timer of the session (settle, ticks, frame fallback, focus); each leaves the set
        for timer in list(self._timers):
            timer.cancel()
        startup_pending = (
            self._startup_task is not None and not self._startup_task.done() and not self.started
        )
        for task in list(self._tasks):
            task.cancel()
        try:
            self.driver.on_exit(code)
        except Exception:
            self.log.exception("driver.on_exit")
        why = "session was killed" if self.killing else f"CLI exited (code {code})"
        if startup_pending:  # the create never got its `ready`: answer it with an error
            self.started = True  # start-up is over, as for a failed one (its task was cancelled above)
            self._answer_create(
                ev.error(
                    self.startup_exit_message(),
                    "spawn_failed",
                    self._create_re,
                    self.key,
                    self.channel_id,
                )
            )
        self.set_state("dead")  # state first, then the turns it ends (as for every terminal event)
        self.turns.close(why)
        if not self.killing:
            self._emit(ev.exited(self.key, self.channel_id, code, self.stderr_tail()))
        for cb in list(self._output_listeners):
            with contextlib.suppress(Exception):
                cb(None)
        self._output_listeners.clear()
        if self._on_dead is not None:
            self._on_dead(self)

    def startup_exit_message(self) -> str:
        """Why a create failed because the CLI is gone: killed, or exited with what it last said that has words
        (its banner art, frames and blank rows left out)."""
        if self.killing:
            return "the session was killed while it was starting"
        said = meaningful_lines(self.stderr_tail().splitlines())[-500:]
        return f"CLI exited (code {self.exit_code}) during startup" + (f": {said}" if said else "")

    def stderr_tail(self) -> str:
        """Last stderr bytes (pipes) or the last non-blank screen rows (PTY: stderr is the screen)."""
        if self._stderr_tail:
            return self._stderr_tail.decode("utf-8", "replace")[-2000:]
        rows = [r.rstrip() for r in self._real_terminal.display if r.strip()]
        return "\n".join(rows[-8:])

    # ------------------------------------------------------------------ commands (from the daemon)
    def _check_alive(self) -> None:
        if self.dead:
            raise SessionCommandError(
                "session_not_found",
                f"session {self.key!r} is dead (exit code {self.exit_code}); create it again",
            )

    def send(self, content: str, msg_id: Any = None, re: Any = None) -> None:
        self._check_alive()
        if self.turns.repeat(msg_id, re):
            return
        validate = getattr(self.driver, "validate_send", None)
        if validate is not None:
            try:
                validate(content)
            except DriverError as exc:
                raise SessionCommandError(exc.code, exc.message) from exc
        self.turns.enqueue(content, msg_id, re)

    def input(self, content: str, re: Any = None) -> None:
        self._check_alive()
        self.driver.input(content)
        self._emit(ev.input_sent(self.key, self.channel_id, re))

    def keystroke(self, keys: list[str], re: Any = None) -> None:
        """Raises keys.BadKey (nothing typed) for an unknown name."""
        self._check_alive()
        data = encode_keys(keys)
        self.driver.keys(data)
        self._emit(ev.keystroke_sent(self.key, self.channel_id, keys, re))

    async def answer(
        self,
        question_id: str | None,
        digit: str | int | None,
        option: str | None,
        text: str | None,
        re: Any = None,
    ) -> None:
        self._check_alive()
        if question_id is not None and question_id not in self.turns.questions:
            raise SessionCommandError("no_question", f"no open question {question_id!r} on this session")
        if isinstance(digit, int) and not isinstance(digit, bool):
            digit = str(digit)  # `options[].digit` is a string; an integer one is the same answer
        if digit is not None and not (isinstance(digit, str) and len(digit) == 1 and digit.isdigit()):
            raise SessionCommandError("bad_field", f"invalid answer digit: {digit!r}")
        if question_id is None and digit is None and option is None and text is None:
            raise SessionCommandError("bad_field", "answer needs question_id, digit, option or text")
        # Without an id the driver picks; we only know which one when a single question is open.
        questions = self.turns.questions
        target = question_id or (next(iter(questions)) if len(questions) == 1 else None)
        try:
            picked = await self.driver.answer(question_id, digit=digit, option=option, text=text)
        except DriverError as exc:
            raise SessionCommandError(exc.code, exc.message) from exc
        if isinstance(picked, dict):  # the driver says which question and option it answered
            target = picked.get("question_id") or target
            digit = picked.get("digit") if picked.get("digit") is not None else digit
        self.turns.mark_answered(target)
        self._emit(ev.answer_sent(self.key, self.channel_id, digit, target, re))

    def interrupt(self, re: Any = None) -> None:
        self._check_alive()
        if self.turns.interrupt(re) is None:
            raise SessionCommandError("no_turn", "no turn is running on this session")
        self.driver.interrupt()
        self.turns.interrupt_noted()

    def write_raw(self, data: bytes) -> None:
        """Attach controller bytes: straight into the PTY; for pipes drivers through `driver.keys`
        (raw keyboard bytes would corrupt a structured stdin protocol)."""
        if self.dead or (self.child is None and self._spawning is None):
            return
        if self.transport == "pty":
            try:
                self.driver.on_user_input(data)
            except Exception:
                self.log.exception("driver.on_user_input")
            self.write(data)
        else:
            try:
                self.driver.keys(data)
            except Exception:
                self.log.exception("driver.keys")

    def add_output_listener(self, cb: Callable[[bytes | None], None]) -> None:
        """Raw output chunks (None once the session is dead) for attach viewers."""
        self._output_listeners.append(cb)

    def remove_output_listener(self, cb: Callable[[bytes | None], None]) -> None:
        with contextlib.suppress(ValueError):
            self._output_listeners.remove(cb)

    def info(self) -> dict[str, Any]:
        try:
            return dict(self.driver.info() or {})
        except Exception:
            self.log.exception("driver.info")
            return {}

    def list_item(self) -> dict[str, Any]:
        info = self.info()
        item: dict[str, Any] = {
            "name": self.key,
            "state": self.state,
            "channel_id": self.channel_id,
            "cli": self.cli,
            "model": info.get("model", self.model),
            "pid": self.pid,
            "turn_id": self.turns.turn_id,
            "queued": len(self.turns.queue),
            "alive": not self.dead,
            "working_dir": self.options.get("working_dir"),
            **self.session_fields(),
        }
        for k, v in info.items():
            item.setdefault(k, v)
        return item

    def session_fields(self) -> dict[str, Any]:
        """What `ready` and the `list` item say of the session beyond its state: whether the CLI answers in
        markdown, and `worktree` {path, branch} when the CLI runs in one."""
        fields: dict[str, Any] = {"markdown": self.driver.markdown}
        if self.worktree is not None:
            fields["worktree"] = self.worktree.info()
        return fields

    def dump(self, re: Any = None) -> dict[str, Any]:
        info = self.info()
        term = self._real_terminal
        x, y, hidden = term.cursor
        fields: dict[str, Any] = {
            "state": self.state,
            "capture": "\n".join(r.rstrip() for r in term.display),
            "count": info.pop("count", 0),
            "observing": self.turns.current is not None,
            "cursor": {"x": x, "y": y, "hidden": hidden},
            "modes": term.modes,
            "osc_state": self.program_status,
            "driver": self.driver.name,
            "cli_version": info.pop("cli_version", None),
            "transcript_path": info.pop("transcript_path", None),
            "turn_id": self.turns.turn_id,
            "queued": len(self.turns.queue),
            "pid": self.pid,
            "cli": self.cli,
            "model": info.pop("model", self.model),
        }
        for k, v in info.items():
            fields.setdefault(k, v)
        return ev.dump(self.key, self.channel_id, re, **fields)

    # ------------------------------------------------------------------ DriverHost
    def _emit(self, event: dict[str, Any]) -> None:
        try:
            self._emit_cb(event)
        except Exception:
            self.log.exception("emit %s", event.get("event"))

    def write(self, data: bytes) -> None:
        if self.dead:
            return
        if self._focus_reporting and not self.focused and data not in (FOCUS_IN, FOCUS_OUT):
            if self._focus_out_timer is not None:
                self._focus_out_timer.cancel()
            self._focus_out_timer = self.call_later(FOCUS_OUT_AGAIN, self._focus_out_again)
        if self.child is not None:
            self.child.write(data)
        elif self._spawning is not None:  # input/keystroke while the fork runs: delivered once attached
            self._early_writes.append(data)

    def close_stdin(self) -> None:
        """EOF on the child's stdin after queued writes (pipes transport; no-op under a PTY)."""
        if self.child is not None and not self.dead:
            self.child.close_stdin()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """`callback` in `delay` seconds (up to `litbridge.timers.GRID` later) unless the CLI died first (one heap
        entry: see `litbridge.timers`)."""
        if self.dead:
            return Timer.spent(callback)
        return self._loop_timers.call_later(delay, callback, self._timers)

    def set_state(self, state: str) -> None:
        if state != self.state:
            old, self.state = self.state, state
            self._emit(ev.state(self.key, self.channel_id, old, state, self.turn_id))
            if old == "dialog" and state != "dead":
                self._emit(ev.generic("dialog_cleared", self.key, self.channel_id))

    @property
    def turn_id(self) -> str | None:
        return self.turns.turn_id

    def turn_text(self, text: str) -> None:
        self.turns.text(text)

    def turn_thinking(self, text: str) -> None:
        self.turns.thinking(text)

    def reasoning(self, text: str) -> None:
        self._emit(ev.reasoning(self.key, self.channel_id, text, self.turn_id))

    def tool_use(self, tool_use_id: str, name: str, input: Any) -> None:
        self._emit(ev.tool_use(self.key, self.channel_id, tool_use_id, name, input, self.turn_id))

    def tool_result(self, tool_use_id: str, content: str, is_error: bool = False) -> None:
        self._emit(ev.tool_result(self.key, self.channel_id, tool_use_id, content, is_error, self.turn_id))

    def turn_complete(
        self,
        content: str,
        usage: dict[str, int] | None = None,
        source: str = "screen",
        exit_code: int | None = None,
    ) -> None:
        self.turns.complete(content, usage, source, exit_code)

    def turn_interrupted(self, content: str = "") -> None:
        self.turns.interrupted(content)

    def turn_error(self, message: str, kind: str = "api_error", detail: str | None = None) -> None:
        self.turns.error(message, kind, detail)

    def interrupt_noted(self) -> None:
        self.turns.interrupt_noted()

    def begin_organic_turn(self, text: str) -> str | None:
        return self.turns.begin_organic(text)

    def open_question(
        self,
        kind: str,
        text: str,
        options: list[dict[str, Any]],
        detail: Any = None,
        source: str | None = None,
    ) -> str:
        return self.turns.open_question(kind, text, options, detail, source)

    def close_question(self, question_id: str, reason: str = "answered") -> None:
        self.turns.close_question(question_id, reason)

    def open_questions(self) -> list[str]:
        return list(self.turns.questions)

    def input_ready(self) -> None:
        self.turns.schedule_pump()

    def emit(self, event: str, **fields: Any) -> None:
        if self.dead and event in _DIALOG_EVENTS:
            return  # `exited` was the last word on the screen: a start-up task cut short has nothing to add
        self._emit(ev.generic(event, self.key, self.channel_id, **fields))
