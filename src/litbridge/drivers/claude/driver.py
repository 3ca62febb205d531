"""The Claude Code driver: launch/pinning, startup dialogs, submit with verification, turn tracking, questions.

State comes from OSC 7501 program-status reports when Claude sends them, corroborated (and otherwise
replaced) by the screen rules of the version module (`v2_1`); turns end from the pinned JSONL transcript,
with a slower screen fallback. Turn ids, the FIFO queue and the one-terminal-event rule belong to the session.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from litbridge.drivers.base import Driver, DriverError, DriverHost, LaunchSpec
from litbridge.drivers.claude import v2_1
from litbridge.drivers.claude.transcript import (
    TranscriptTailer,
    TurnEvent,
    TurnTracker,
    config_dir,
    global_config_path,
    project_dir,
)
from litbridge.drivers.claude.watch import IN_CREATE, IN_MOVED_TO, DirWatch
from litbridge.keys import encode_key, encode_keys

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
ENTER, ESC, CTRL_C = encode_key("Enter"), encode_key("Esc"), encode_key("C-c")

SETTLE = 0.15  # a classification must hold this long before it is believed (half-drawn frames)
DIALOG_QUIET = 0.5  # output quiet this long after a dialog first paints before a key is sent
KEY_QUIET = 0.2  # ... and this long after the repaint our previous key caused, before the next key
ENTER_GAP = 0.12  # paste -> Enter, as separate writes
STARTUP_TIMEOUT = 60.0
SUBMIT_TIMEOUT = 15.0
FALLBACK_QUIET = 8.0  # screen fallback: idle + completion line + silent transcript for this long
FALLBACK_MIN_TURN = 2.0
INTERRUPT_GRACE = 2.0
UNKNOWN_MODAL_WAIT = 5.0  # an unparseable startup modal is reported (unknown_dialog) after this long
FRAME_QUIET = 0.03  # response text is read only after output paused this long (whole frames)
STREAM_EVERY = 0.1  # `replace` coalescing: the screen text is read at most this often
OSC_STALE = 3.0  # an OSC `working` contradicted this long by an idle screen is ignored
POLL_BUSY, POLL_IDLE = 0.05, 0.25
READY_STABLE = 0.3  # startup: an idle live prompt must hold this long before `ready` (screen evidence only)
READY_STABLE_OSC = 0.05  # ... when Claude itself has reported OSC 7501 state=idle (one whole frame is enough)
POLL_WATCHED = 0.5  # with an inotify watch the timer poll is only a fallback (and runs the screen fallbacks)

_RESUME_FLAGS = ("--resume", "-r", "--continue", "-c")


@dataclass
class _Turn:
    text: str
    started: float
    organic: bool = False
    witnessed: bool = False  # the transcript holds this turn's prompt
    went_busy: bool = False
    prompt_seen: bool = False  # the prompt row was on screen at least once
    last_text: str = ""
    interrupt_at: float | None = None
    enters: int = 0
    repastes: int = 0
    host_id: str | None = None  # the session's turn id; when the session ends the turn itself, ours is stale


@dataclass
class _Question:
    id: str
    dialog: v2_1.Dialog
    first_paint: float
    answered: bool = False
    signature: tuple = field(default_factory=tuple)


@dataclass
class _StartupDialog:
    kind: str
    signature: tuple
    first_paint: float
    keys: list[str] = field(default_factory=list)
    last_key_at: float = 0.0
    changed_since_key: bool = True


def _decode_status(fields: dict[str, Any]) -> dict[str, Any]:
    """OSC 7501 fields with `msg`/`title` base64-decoded when they still are."""
    out = dict(fields)
    for k in ("msg", "title"):
        v = out.get(k)
        if isinstance(v, str) and v:
            try:
                out[k] = base64.b64decode(v, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                pass
    return out


RULES: dict[str, Any] = {"2.1": v2_1}
"""Validated screen-rule modules by CLI version prefix (a new CLI version gets a new module beside v2_1)."""


def rules_for(version: str | None) -> Any:
    """The rules module for a reported CLI version; unknown or not yet known -> the newest one."""
    if version:
        for prefix, mod in RULES.items():
            if version == prefix or version.startswith(prefix + "."):
                return mod
    return RULES[max(RULES, key=lambda v: tuple(int(x) for x in v.split(".")))]


class ClaudeDriver(Driver):
    """Claude Code (2.1.x) under a 200x50 PTY."""

    name = "claude"

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        self.cwd = str(options.get("working_dir") or os.environ.get("HOME") or os.getcwd())
        self.env: dict[str, str] = {str(k): str(v) for k, v in (options.get("env") or {}).items()}
        self.args: list[str] = [str(a) for a in (options.get("args") or [])]
        self.resume_token: str | None = options.get("resume")
        self.session_id: str | None = None
        self.resumed = False
        self.model: str | None = options.get("model")
        self.cli_version: str | None = None
        self.rules = rules_for(None)
        self.screen = v2_1.ScreenState("blank")
        self._pending_key: tuple | None = None
        self._pending_since = 0.0
        self._settle_handle: asyncio.TimerHandle | None = None
        self._stream_handle: asyncio.TimerHandle | None = None
        self._poll_handle: asyncio.TimerHandle | None = None
        self._watch: DirWatch | None = None
        self._frame = 0  # bumped per on_screen: the classification cache key (with the last output time)
        self._cls_key: tuple[int, float] | None = None
        self._cls: v2_1.ScreenState | None = None
        self.osc: dict[str, Any] | None = None
        self.osc_seen = False
        self.tailer: TranscriptTailer | None = None
        self.tracker = TurnTracker()
        self.turn: _Turn | None = None
        self.question: _Question | None = None
        self.started = False
        self.exit_code: int | None = None
        self.exited = False
        self._waiters: list[asyncio.Future] = []
        self._last_change = 0.0
        self._last_transcript = 0.0
        self._last_clear_check = 0.0
        self._new_file_until = 0.0  # watched folder: a file appeared recently, look for a `/clear` roll
        self._spawn_wall = 0.0
        self._input_was_ready = False
        self._prev_final = ""
        self._dialog_paint: dict[tuple, float] = {}
        self._last_spinner_body: str | None = None
        self._idle_since: float | None = None
        self._unknown_reported: str | None = None
        self._osc_at = 0.0
        self._last_stream_at = 0.0
        self._marks: dict[str, float] = {}  # startup milestones (seconds since spawn), logged at ready

    # ------------------------------------------------------------------------------------------ launch
    def launch(self) -> LaunchSpec:
        argv = [str(self.options.get("cli") or "claude")]
        args = list(self.args)
        has_resume = any(a in _RESUME_FLAGS or a.startswith("--resume=") for a in args)
        pdir = project_dir(self.cwd, self.env)
        if self.resume_token and not has_resume and not (pdir / f"{self.resume_token}.jsonl").exists():
            # `--resume` of a conversation that is not on disk makes Claude exit: start a fresh one instead
            self.host.log.warning(
                "claude: no transcript for resume token %s; starting fresh", self.resume_token
            )
            self.resume_token = None
        if self.resume_token and not has_resume:
            args += ["--resume", self.resume_token]
            self.session_id = self.resume_token
            self.resumed = True
        elif has_resume:
            self.resumed = True
            if "--continue" in args or "-c" in args:
                self.session_id = _newest_transcript(pdir)
            for i, a in enumerate(args):
                if a in ("--resume", "-r") and i + 1 < len(args) and not args[i + 1].startswith("-"):
                    self.session_id = args[i + 1]
                elif a.startswith("--resume="):
                    self.session_id = a.split("=", 1)[1]
        elif "--session-id" in args:
            i = args.index("--session-id")
            self.session_id = args[i + 1] if i + 1 < len(args) else None
        else:
            self.session_id = str(uuid.uuid4())
            args += ["--session-id", self.session_id]
        if self.model and "--model" not in args:
            args += ["--model", str(self.model)]
        if self.options.get("preapprove"):
            self.preapprove()
        # A resumed file's history is skipped: reading starts at its end.
        self.tailer = TranscriptTailer(pdir, self.session_id, from_start=False)
        self._spawn_wall = _wall()
        return LaunchSpec(argv=argv + args, env={}, cwd=self.cwd, transport="pty")

    def preapprove(self) -> None:
        """Write Claude's own config keys so the trust / API-key / bypass dialogs never show (reference §6)."""
        gpath = global_config_path(self.env)
        data = _read_json(gpath)
        data.setdefault("hasCompletedOnboarding", True)
        data.setdefault("theme", "dark")
        data["hasSeenAutoDefaultNotice"] = True
        projects = data.setdefault("projects", {})
        proj = projects.setdefault(os.path.abspath(self.cwd), {})
        proj["hasTrustDialogAccepted"] = True
        key = self.env.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
        if key:
            resp = data.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
            approved = resp.setdefault("approved", [])
            resp.setdefault("rejected", [])
            if key[-20:] not in approved:
                approved.append(key[-20:])
            if key[-20:] in resp["rejected"]:
                resp["rejected"].remove(key[-20:])
        _write_json(gpath, data)
        spath = config_dir(self.env) / "settings.json"
        settings = _read_json(spath)
        settings["skipDangerousModePermissionPrompt"] = True
        _write_json(spath, settings)

    # ------------------------------------------------------------------------------------------ helpers
    def _now(self) -> float:
        return self.host.loop.time()

    def _rows(self) -> list[str]:
        return list(self.host.terminal.display)

    def _classify(self) -> v2_1.ScreenState:
        """The current screen's classification, computed once per frame (it was ~20% of the daemon's CPU)."""
        key = (self._frame, getattr(self.host, "last_output_at", 0.0) or 0.0)
        if self._cls is None or key != self._cls_key:
            self._cls = self.rules.classify(self._rows())
            self._cls_key = key
        return self._cls

    def _bracketed_paste(self) -> bool:
        try:
            return bool(self.host.terminal.modes.get("bracketed_paste"))
        except Exception:  # a terminal without modes: do not block on it
            return True

    def _write_keys(self, names: list[str]) -> None:
        self.host.write(encode_keys(names))

    def _wake(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    async def _wait_change(self, timeout: float) -> None:
        """Until the screen changes (or the CLI exits), at most `timeout` seconds."""
        fut = self.host.loop.create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            if fut in self._waiters:
                self._waiters.remove(fut)

    def _quiet_for(self) -> float:
        last = max(getattr(self.host, "last_output_at", 0.0) or 0.0, self._last_change)
        return self._now() - last

    # ------------------------------------------------------------------------------------------ startup
    async def startup(self) -> dict[str, Any]:
        self._start_watch()
        self._schedule_poll(0.0)
        loop_start = self._now()
        deadline = loop_start + STARTUP_TIMEOUT
        current: _StartupDialog | None = None
        idle_since: float | None = None
        unknown_since: float | None = None
        while True:
            if self.exited:
                excerpt = "\n".join(r.rstrip() for r in self._rows() if r.strip())[-600:]
                raise DriverError(
                    "spawn_failed", f"claude exited during startup (code {self.exit_code}): {excerpt}"
                )
            now = self._now()
            if now > deadline:
                raise DriverError("timeout", f"claude did not reach its prompt within {STARTUP_TIMEOUT:.0f}s")
            cls = self._classify()
            dialog = cls.dialog
            if current is not None and (dialog is None or dialog.signature() != current.signature):
                # the dialog we were driving has gone (confirmed); another may follow
                if current.keys:
                    self.host.emit("dialog_dismissed", dialog=current.kind, keys=list(current.keys))
                current = None
            if cls.state == "dialog" and dialog is not None and dialog.kind in self.rules.STARTUP_ACCEPT:
                idle_since = None
                sig = dialog.signature()
                if current is None:
                    current = _StartupDialog(dialog.kind, sig, now)
                wait = max(
                    DIALOG_QUIET - (now - current.first_paint),
                    (KEY_QUIET if current.keys else DIALOG_QUIET) - self._quiet_for(),
                )
                settled = wait <= 0
                repainted = current.changed_since_key or now - current.last_key_at > 2.0
                if settled and repainted:
                    target = dialog.find(label=self.rules.STARTUP_ACCEPT[dialog.kind])
                    keys = self.rules.cursor_keys(dialog, target) if target is not None else []
                    if not keys:
                        raise DriverError(
                            "startup_dialog", f"cannot parse the {dialog.kind} dialog's options"
                        )
                    self._write_keys(keys[:1])
                    current.keys.append(keys[0])
                    current.last_key_at = now
                    current.changed_since_key = False
                before = self._last_change
                # not settled yet: wake exactly when it will be (or on a change); else wait for our key's repaint
                await self._wait_change(0.3 if settled or not repainted else wait + 0.005)
                if self._last_change != before:
                    current.changed_since_key = True
                continue
            if cls.state == "idle" and cls.live_prompt and self._bracketed_paste():
                unknown_since = None
                idle_since = idle_since if idle_since is not None else now
                self._mark("screen_idle")
                osc_idle = self.osc_seen and (self.osc or {}).get("state") == "idle"
                need = READY_STABLE_OSC if osc_idle else READY_STABLE
                if now - idle_since >= need - 1e-6:
                    break
                await self._wait_change(need - (now - idle_since) + 0.005)
                continue
            elif dialog is not None:
                # a modal we do not answer by ourselves: relay it as a question once it has settled
                idle_since = None
                unknown_since = unknown_since if unknown_since is not None else now
                if now - unknown_since >= 1.5 and self._quiet_for() >= DIALOG_QUIET:
                    self.started = True
                    self._commit(cls)
                    break
            else:
                idle_since = None
                excerpt = self.rules.modal_excerpt(self._rows())
                if excerpt is None:
                    unknown_since = None
                else:
                    # a modal we cannot even parse: never type into it; tell the client and hand over
                    unknown_since = unknown_since if unknown_since is not None else now
                    if now - unknown_since >= UNKNOWN_MODAL_WAIT and self._quiet_for() >= DIALOG_QUIET:
                        self.host.emit("unknown_dialog", dialog=excerpt)
                        self._unknown_reported = excerpt
                        break
            await self._wait_change(0.25)
        self.started = True
        self._mark("ready")
        self.host.log.debug(
            "claude startup (s since spawn): %s",
            " ".join(f"{k}={v:.3f}" for k, v in sorted(self._marks.items(), key=lambda kv: kv[1])),
        )
        self._set_screen(self._classify())
        version, model = self.rules.header_info(self._rows())
        self.cli_version = version or self.cli_version
        if model and not self.model:
            self.model = model
        self._update_state()
        self._input_was_ready = self.can_accept_input()
        return {"model": self.model, "resumed": self.resumed}

    # ------------------------------------------------------------------------------------------ events in
    def _mark(self, name: str) -> None:
        if name not in self._marks:
            self._marks[name] = self._now() - (getattr(self.host, "spawned_at", 0.0) or 0.0)

    def on_output(self, data: bytes) -> None:
        if not self.started:
            self._mark("first_output")
            if self._bracketed_paste():
                self._mark("bracketed_paste")

    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        self._frame += 1
        now = self._now()
        self._last_change = now
        self._wake()
        cls = self._classify()
        if self.cli_version is None and cls.version:
            self.cli_version = cls.version
            self.rules = rules_for(cls.version)
            self._cls = None
            if cls.version.rsplit(".", 1)[0] not in RULES:
                self.host.log.warning(
                    "claude %s: no screen rules for this version; using %s", cls.version, self.rules.__name__
                )
        if cls.state == "busy" and self.turn is not None:
            self.turn.went_busy = True  # even a busy blip shorter than the debounce proves the Enter landed
        key = (cls.state, cls.dialog.signature() if cls.dialog else None)
        if key != self._pending_key:
            self._pending_key = key
            self._pending_since = now
            if cls.dialog is not None:
                self._dialog_paint.setdefault(cls.dialog.signature(), now)
        if self._settle_handle is None:
            self._settle_handle = self.host.call_later(SETTLE, self._settle)
        if (self.turn is not None or cls.state == "busy") and self._stream_handle is None:
            # leading edge after a pause (the first text shows at once), then at most every STREAM_EVERY
            since = now - self._last_stream_at
            delay = FRAME_QUIET if since >= STREAM_EVERY else STREAM_EVERY - since
            self._stream_handle = self.host.call_later(max(delay, FRAME_QUIET), self._stream)

    def _settle(self) -> None:
        self._settle_handle = None
        cls = self._classify()
        key = (cls.state, cls.dialog.signature() if cls.dialog else None)
        now = self._now()
        if key != self._pending_key:
            self._pending_key, self._pending_since = key, now
        if now - self._pending_since >= SETTLE - 1e-6:
            self._commit(cls)
        else:
            self._settle_handle = self.host.call_later(SETTLE - (now - self._pending_since), self._settle)

    def on_status(self, fields: dict[str, Any]) -> None:
        fields = _decode_status(fields)
        if fields.get("state") in (None, "?"):
            return
        self.osc = fields
        self.osc_seen = True
        self._osc_at = self._now()
        state = fields.get("state")
        if not self.started:
            self._mark(f"osc_{state}")
            self._wake()  # startup waits on it too
        if self.turn is not None:
            if state == "working":
                self.turn.went_busy = True
        if self.started:
            self._update_state()
            self._check_input_ready()
            if state == "working":
                # re-check once the report could have gone stale (nothing else may wake the session)
                self.host.call_later(OSC_STALE + 0.05, self._recheck)

    def _recheck(self) -> None:
        if not self.exited:
            self._update_state()
            self._check_input_ready()

    def on_exit(self, exit_code: int | None) -> None:
        self.exited = True
        self.exit_code = exit_code
        self._wake()
        for h in (self._poll_handle, self._settle_handle, self._stream_handle):
            if h is not None:
                h.cancel()
        self._poll_handle = self._settle_handle = self._stream_handle = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    # ------------------------------------------------------------------------------------------ screen
    def _set_screen(self, cls: v2_1.ScreenState) -> None:
        if cls.state != "idle":
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = self._now()
        self.screen = cls

    def _commit(self, cls: v2_1.ScreenState) -> None:
        self._set_screen(cls)
        if not self.started:
            return
        dialog = cls.dialog if cls.state in ("dialog", "other") else None
        if dialog is not None:
            sig = dialog.signature()
            if self.question is None or self.question.signature != sig:
                if self.question is not None:
                    self.host.close_question(
                        self.question.id, "answered" if self.question.answered else "dismissed"
                    )
                qid = self.host.open_question(
                    self.rules.QUESTION_KIND.get(dialog.kind, "choice"),
                    dialog.text,
                    [o.as_dict() for o in dialog.options],
                    dialog.detail or None,
                    "cli-dialog",
                )
                self.question = _Question(
                    qid, dialog, self._dialog_paint.get(sig, self._now()), signature=sig
                )
            else:
                self.question.dialog = dialog
        elif self.question is not None and cls.state != "blank":
            self.host.close_question(self.question.id, "answered" if self.question.answered else "dismissed")
            self.question = None
        if cls.dialog is None:
            self._dialog_paint.clear()
        if cls.state == "other" and cls.dialog is None:
            excerpt = self.rules.modal_excerpt(self._rows())
            if excerpt is not None and excerpt != self._unknown_reported:
                self._unknown_reported = excerpt  # a modal we cannot parse: say so once, never type into it
                self.host.emit("unknown_dialog", dialog=excerpt)
        elif cls.state in ("idle", "busy"):
            self._unknown_reported = None
        if self.turn is not None and cls.state == "busy":
            self.turn.went_busy = True
        self._update_state()
        if self.turn is not None:
            self._stream()
        self._check_input_ready()

    def _osc_working(self) -> bool:
        """OSC 7501 says working, unless the screen has contradicted it (idle, no spinner) for 3 s: a lost
        `done` report must not hold the session busy forever."""
        if not (self.osc_seen and self.osc is not None and self.osc.get("state") == "working"):
            return False
        if self.screen.state == "idle" and self._idle_since is not None:
            return self._now() - max(self._idle_since, self._osc_at) < OSC_STALE
        return True

    def _busy(self) -> bool:
        if self.osc_seen:
            # OSC leads the screen by a few ms both ways; a busy screen with OSC idle is a draft-hint frame
            return self._osc_working() or (self.screen.state == "busy" and self.screen.spinner is not None)
        return self.screen.state == "busy"

    def _update_state(self) -> None:
        if not self.started:
            self.host.set_state("starting")
            return
        if self.exited:
            return
        if self.question is not None:
            state = "dialog"
        elif self._busy():
            state = "responding" if self.turn is not None and self.turn.last_text else "thinking"
        elif self.turn is not None:
            # idle screen while the transcript has not closed the turn yet: keep the turn's state
            state = "responding" if self.turn.last_text else "thinking"
        elif self.screen.state in ("idle", "busy"):
            state = "idle"
        else:
            return
        self.host.set_state(state)

    def _check_input_ready(self) -> None:
        ready = self.can_accept_input()
        if ready and not self._input_was_ready:
            self.host.input_ready()
        self._input_was_ready = ready

    def _sync_turn(self) -> None:
        """Drop our turn if the session already ended it (its own interrupt fallback, a submit error...)."""
        turn = self.turn
        if turn is not None and turn.host_id is not None and self.host.turn_id != turn.host_id:
            self.turn = None
            self._prev_final = turn.last_text
            self._input_was_ready = False

    def can_accept_input(self) -> bool:
        self._sync_turn()
        return (
            self.started
            and not self.exited
            and self.turn is None
            and self.question is None
            and self.screen.state == "idle"
            and self.screen.live_prompt
            and not self.screen.draft
            and not self._osc_working()
            and self._bracketed_paste()
        )

    def _relay_spinner(self, spinner: str | None) -> None:
        """`thinking` for the spinner line, once per change of its text (not per animation frame)."""
        if not spinner:
            return
        body = spinner[2:]
        if body != self._last_spinner_body:
            self._last_spinner_body = body
            self.host.turn_thinking(spinner)

    def _stream(self) -> None:
        self._stream_handle = None
        self._last_stream_at = self._now()
        turn = self.turn
        if self.question is not None or self.exited:
            return
        since_output = self._now() - (getattr(self.host, "last_output_at", 0.0) or 0.0)
        if since_output < FRAME_QUIET:
            # a frame split across reads looks like garbage for a moment: read the screen between frames
            self._stream_handle = self.host.call_later(FRAME_QUIET - since_output + 0.005, self._stream)
            return
        cls = self._classify()
        spinner = cls.spinner if cls.state == "busy" else None
        if turn is None:
            self._relay_spinner(spinner)  # e.g. /compact progress outside a turn
            return
        rows = list(self.host.terminal.logical_lines())
        if not turn.witnessed:
            self._relay_spinner(spinner)
            return
        needle = turn.text if len(turn.text) < 800 and turn.text.count("\n") < 8 else None
        start = self.rules.find_turn_start(rows, needle)
        if start is not None:
            turn.prompt_seen = True
        elif not turn.prompt_seen:
            self._relay_spinner(spinner)
            return
        text = self.rules.extract_response(rows, start)
        if start is None and turn.last_text:
            # the prompt scrolled off: the screen shows a window of the answer; extend what we had with it
            text = stitch(turn.last_text, text)
        if (
            text
            and text != turn.last_text
            and text != self._prev_final
            and len(text) * 2 >= len(turn.last_text)
        ):
            turn.last_text = text
            self.host.turn_text(text)
            self._update_state()
        else:
            self._relay_spinner(spinner)

    # ------------------------------------------------------------------------------------------ transcript
    def _start_watch(self) -> None:
        """inotify on the transcript folder (Linux): a new line is read as soon as it is written."""
        if self.exited or self._watch is not None or self.tailer is None:
            return
        self._watch = DirWatch.start(
            self.host.loop, self.tailer.directory, self._on_transcript_change, self._wants_event
        )

    def _wants_event(self, mask: int, name: str) -> bool:
        """Our own file, or a new file (a `/clear` roll); other sessions' writes in a shared folder are not."""
        tailer = self.tailer
        if tailer is None or tailer.session_id is None:
            return True
        if mask & (IN_CREATE | IN_MOVED_TO):
            self._new_file_until = self._now() + 5.0  # its first line may come a moment later
            return True
        return name == f"{tailer.session_id}.jsonl"

    def _on_transcript_change(self) -> None:
        if self.exited:
            return
        try:
            self._poll_once()
        except Exception:
            self.host.log.exception("claude: transcript poll")

    def _schedule_poll(self, delay: float | None = None) -> None:
        if self.exited:
            return
        if delay is None:
            if self._watch is not None:
                delay = POLL_WATCHED
            else:
                delay = POLL_BUSY if self.turn is not None or self.screen.state != "idle" else POLL_IDLE
        self._poll_handle = self.host.call_later(delay, self._poll)

    def _poll(self) -> None:
        self._poll_handle = None
        if self._watch is not None:
            self._watch.refresh()  # safety net: the folder appeared without the watch seeing it
        try:
            self._poll_once()
        finally:
            self._schedule_poll()

    def _poll_once(self) -> None:
        self._sync_turn()
        tailer = self.tailer
        if tailer is None:
            return
        now = self._now()
        if tailer.session_id is None:
            found = tailer.newest_since(self._spawn_wall - 1.0)
            if found:
                tailer.pin(found, from_start=not self.resumed)
                self.session_id = found
        elif now - self._last_clear_check >= 0.5 and (
            self._watch is None or not self._watch.ready or now < self._new_file_until
        ):
            # with a live folder watch a roll is only looked for when a new file appeared (no globbing)
            self._last_clear_check = now
            rolled = tailer.find_clear_roll(self.cwd)
            if rolled and rolled != tailer.session_id:
                self.host.log.info("claude: /clear rolled the transcript to %s", rolled)
                tailer.pin(rolled, from_start=True)
                self.session_id = rolled
        entries = tailer.poll()
        if entries:
            self._last_transcript = now
            for ev in self.tracker.feed(entries):
                self._on_turn_event(ev)
        self._check_fallbacks()

    def _on_turn_event(self, ev: TurnEvent) -> None:
        host = self.host
        if ev.kind == "prompt":
            if self.turn is not None and not self.turn.witnessed:
                self.turn.witnessed = True
            elif self.started:
                begin = getattr(host, "begin_organic_turn", None)
                if callable(begin) and self.turn is None:
                    tid = begin(ev.text)
                    self.turn = _Turn(ev.text, self._now(), organic=True, witnessed=True)
                    self.turn.host_id = tid if isinstance(tid, str) else self.host.turn_id
                    self._input_was_ready = False
            if self.turn is not None:
                self._stream()
            return
        if self.turn is None or not self.turn.witnessed:
            # events of an older prompt (e.g. the `abandoned` close of an Esc-before-first-token turn that
            # arrives with the next prompt) never touch a turn whose own prompt is not in the transcript yet
            return
        if ev.kind == "tool_use":
            host.tool_use(ev.data["tool_use_id"], ev.text, ev.data.get("input"))
        elif ev.kind == "tool_result":
            host.tool_result(ev.data["tool_use_id"], ev.text, bool(ev.data.get("is_error")))
        elif ev.kind == "complete":
            if ev.text and not self.turn.last_text:
                # finished before the first stream tick: the client still gets the text as a `replace`
                self.turn.last_text = ev.text
                host.turn_text(ev.text)
            host.turn_complete(ev.text, ev.data.get("usage"), "transcript")
            self._end_turn(ev.text)
        elif ev.kind == "interrupted":
            host.turn_interrupted(ev.text or self.turn.last_text)
            self._end_turn(ev.text)
        elif ev.kind == "abandoned":
            host.turn_interrupted(ev.text or self.turn.last_text)
            self._end_turn(ev.text)
        elif ev.kind == "error":
            host.turn_error(ev.text, "api_error")
            self._end_turn("")

    def _end_turn(self, final: str) -> None:
        turn = self.turn
        self.turn = None
        if turn is not None:
            self._prev_final = turn.last_text
        self._input_was_ready = False
        cls = self._classify()
        if cls.state in ("idle", "busy"):
            # The transcript can land before the settle debounce of the screen that follows an answered dialog:
            # take that screen now, through the same path as a settled frame, so the closed dialog's question is
            # dropped too (otherwise the state would read `dialog` after `complete`).
            self._commit(cls)
        self._update_state()
        self._check_input_ready()

    def _check_fallbacks(self) -> None:
        turn = self.turn
        if turn is None or not self.started:
            return
        now = self._now()
        idle_screen = self.screen.state == "idle" and self.question is None and not self._busy()
        transcript_quiet = now - max(self._last_transcript, turn.started)
        if turn.interrupt_at is not None and idle_screen and now - turn.interrupt_at >= INTERRUPT_GRACE:
            if transcript_quiet >= INTERRUPT_GRACE - 0.5:
                self.host.turn_interrupted(turn.last_text)
                self._end_turn(turn.last_text)
                draft = self.screen.draft
                if draft and turn.text.strip().startswith(draft[:40]):
                    self.host.write(CTRL_C)  # Esc before the first token put the prompt back: clear it
                return
        if (
            idle_screen
            and (turn.witnessed or turn.went_busy)
            and now - turn.started >= FALLBACK_MIN_TURN
            and now - self._last_change >= FALLBACK_QUIET
            and transcript_quiet >= FALLBACK_QUIET
            and (not self.tracker.open or transcript_quiet >= 60.0)
            and self._completion_below_prompt(turn)
        ):
            rows = list(self.host.terminal.logical_lines())
            start = self.rules.find_turn_start(rows, turn.text if len(turn.text) < 800 else None)
            text = self.rules.extract_response(rows, start) or turn.last_text
            self.host.turn_complete(text, None, "screen")
            self._end_turn(text)

    def _completion_below_prompt(self, turn: _Turn) -> bool:
        rows = [r.rstrip() for r in self._rows()]
        start = self.rules.find_turn_start(rows, turn.text if len(turn.text) < 800 else None)
        begin = 0 if start is None else start + 1
        return any(self.rules.COMPLETION_RE.match(r) for r in rows[begin:])

    # ------------------------------------------------------------------------------------------ input
    async def submit(self, text: str) -> None:
        now = self._now()
        turn = _Turn(text, now, host_id=self.host.turn_id)
        self.turn = turn
        self._input_was_ready = False
        payload = paste_payload(text)
        self.host.write(PASTE_START + payload + PASTE_END)
        await asyncio.sleep(ENTER_GAP)
        if self.turn is not turn:
            return
        self.host.write(ENTER)
        turn.enters = 1
        last_enter = self._now()
        deadline = self._now() + SUBMIT_TIMEOUT
        while self.turn is turn and not (turn.witnessed or turn.went_busy):
            if self.exited:
                return
            await self._wait_change(0.3)
            now = self._now()
            if self.turn is not turn or turn.witnessed or turn.went_busy or self.exited:
                return
            if self.question is not None or self.screen.state == "dialog":
                deadline = max(deadline, now + 5.0)  # never press Enter into a dialog; wait for it
                continue
            if now > deadline:
                self.host.turn_error(
                    "the message was not submitted (no transcript entry, never busy)", "timeout"
                )
                self._end_turn("")
                return
            cls = self._classify()
            if cls.state != "idle" or not cls.live_prompt or now - self._last_change < 0.2:
                continue
            draft = cls.draft
            if draft and now - last_enter >= 0.9 and turn.enters < 4:
                self.host.write(ENTER)  # the text is in the box but the Enter was taken as paste
                turn.enters += 1
                last_enter = now
            elif not draft and now - last_enter >= 2.5 and turn.repastes < 1:
                self.host.write(PASTE_START + payload + PASTE_END)  # the paste was swallowed
                await asyncio.sleep(ENTER_GAP)
                if self.turn is turn:
                    self.host.write(ENTER)
                turn.repastes += 1
                last_enter = self._now()

    def input(self, text: str) -> None:
        """Type `text` + Enter without observing (slash commands); Enter is its own write, as for `send`."""
        payload = paste_payload(text)
        if "\n" in text or len(text) > 100:
            self.host.write(PASTE_START + payload + PASTE_END)
            self.host.call_later(ENTER_GAP, lambda: self.host.write(ENTER))
        else:
            self.host.write(payload)
            self.host.call_later(ENTER_GAP, lambda: self.host.write(ENTER))

    def interrupt(self) -> None:
        self.host.write(ESC)
        if self.turn is not None:
            self.turn.interrupt_at = self._now()

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> None:
        q = self.question
        if q is None or (question_id and question_id != q.id):
            raise DriverError(
                "no_question",
                "no dialog is waiting on this session"
                if q is None
                else f"question {question_id} is not open (open: {q.id})",
            )
        dialog = q.dialog
        idx: int | None = None
        if digit is not None and str(digit).strip():
            try:
                idx = dialog.find(digit=int(str(digit).strip()))
            except ValueError:
                raise DriverError("bad_field", f"digit must be a number, got {digit!r}") from None
        elif option:
            idx = dialog.find(label=option)
        elif text:
            idx = dialog.find(label=text)
            if idx is None:
                # Claude 2.1's dialogs are pick-lists: there is no free-text field to type `text` into
                labels = ", ".join(f"{o.digit}. {o.label}" for o in dialog.options)
                raise DriverError(
                    "bad_field",
                    f"text answers are not supported for this {dialog.kind} question (it has no free-text "
                    f"field); answer with a digit or an option label (options: {labels})",
                )
        if idx is None:
            labels = ", ".join(f"{o.digit}. {o.label}" for o in dialog.options)
            raise DriverError("bad_field", f"no such option (options: {labels})")
        q.answered = True
        await self._drive_dialog(q.signature, dialog.options[idx].label)

    async def _drive_dialog(self, signature: tuple, label: str) -> None:
        """Move the cursor to `label` and confirm: one key per settled frame, never a blind Enter."""
        first = self._dialog_paint.get(signature, self._now())
        changed = True
        last_key = 0.0
        for _ in range(40):
            if self.exited:
                return
            now = self._now()
            cls = self._classify()
            dialog = cls.dialog
            if dialog is None or dialog.signature() != signature:
                return
            wait = max(DIALOG_QUIET - (now - first), (KEY_QUIET if last_key else 0.3) - self._quiet_for())
            settled = wait <= 0
            if settled and (changed or now - last_key > 2.0):
                idx = dialog.find(label=label)
                if idx is None:
                    return
                keys = self.rules.cursor_keys(dialog, idx)
                if not keys:
                    return
                self._write_keys(keys[:1])
                last_key = now
                changed = False
                if keys[0] != "Up" and keys[0] != "Down":
                    return
            before = self._last_change
            await self._wait_change(0.5 if settled or not changed else wait + 0.005)
            if self._last_change != before:
                changed = True

    # ------------------------------------------------------------------------------------------ stop/info
    async def stop(self, store_resume: bool) -> str | None:
        if not store_resume or not self.session_id or self.tailer is None:
            return None
        path = self.tailer.path
        if path is not None and path.exists():
            return self.session_id
        return None

    def info(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "cli_version": self.cli_version,
            "transcript_path": str(self.tailer.path) if self.tailer and self.tailer.path else None,
            "claude_session_id": self.session_id,
            "osc_state": (self.osc or {}).get("state"),
            "observing": self.turn is not None,
            "screen_state": self.screen.state,
        }


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


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def paste_payload(text: str) -> bytes:
    """The message as bracketed-paste content: CR/CRLF -> LF, other control bytes (ESC...) removed, so the
    text can neither end the paste early nor be taken as keys."""
    return _CONTROL_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).encode("utf-8")


def _wall() -> float:
    import time

    return time.time()


def _newest_transcript(directory: Path) -> str | None:
    """Stem of the most recently modified transcript (what `--continue` resumes)."""
    best: tuple[float, str] | None = None
    for p in directory.glob("*.jsonl"):
        try:
            m = p.stat().st_mtime
        except OSError:
            continue
        if best is None or m > best[0]:
            best = (m, p.stem)
    return best[1] if best else None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, path)
