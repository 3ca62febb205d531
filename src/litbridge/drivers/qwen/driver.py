"""The Qwen Code driver: the Gemini CLI driver (it is a fork) with Qwen's plug-ins, its chat file and its turn
ends.

What is inherited: the engine hooks (title + screen readings, paste submit, Esc to interrupt), the per-session
settings folder, the chat follower and the turn end on an idle CLI after the record's last answer. What is Qwen's:
`QWEN_HOME`, the chat file's place and meaning (`chats.py`), `approval_mode`, an API error read from the record
(the CLI logs it as telemetry for the turn's `prompt_id`) and a cancel the record does not mark (`Request
cancelled.` on screen, the partial answer in the record), and the prompt a cancel puts back in the input box.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litbridge.drivers.base import DriverHost
from litbridge.drivers.engine import Turn
from litbridge.drivers.gemini.driver import GeminiDriver, _Dispatch
from litbridge.drivers.gemini.launch import flag_value
from litbridge.drivers.gemini.v0_61 import Reading
from litbridge.drivers.qwen.chats import find_chat_file, project_id, qwen_home
from litbridge.drivers.qwen.follow import QwenChatFollower
from litbridge.drivers.qwen.launch import LaunchHost
from litbridge.drivers.qwen.versions import CLI
from litbridge.drivers.versions import recorded_version
from litbridge.keys import encode_key

ESC = encode_key("Esc")
ESC_AGAIN, ESC_AGAIN_MAX = 1.5, 3
"""An interrupt the CLI did not act on: Esc again after this many seconds, at most this many times."""


class QwenDriver(GeminiDriver):
    """Qwen Code (0.24.x) under a 200x50 PTY, on the shared turn engine."""

    name = "qwen"
    CLI = CLI
    follower: QwenChatFollower  # `make_follower`'s

    def __init__(self, host: DriverHost, options: dict[str, Any]) -> None:
        super().__init__(host, options)

    def cli_home(self, env: dict[str, str]) -> Path:
        return qwen_home(env)

    def make_follower(self) -> QwenChatFollower:
        return QwenChatFollower(
            self.host,
            self.home,
            self.cwd,
            lambda: (self.session_id, self.chat_path_hint),
            self.record.tracker(),
            _Dispatch(self),
            self._after_read,
            busy=lambda: self.engine.turn is not None,
        )

    # ------------------------------------------------------------------------------------------ turn ends
    def _maybe_complete(self) -> None:
        """On an idle CLI (screen and title) after the turn's own prompt: the record's last answer completes the
        turn, its API error fails it, a denied tool call ends it `interrupted`; `Request cancelled.` below the prompt is the CLI's own cancel (the record
        keeps only the partial answer), an interrupt already noted is the engine's to end."""
        turn = self.engine.turn
        if turn is None or not turn.witnessed:
            return
        reading = self.engine.reading()
        if reading.state != "idle":
            return
        title = reading.title if isinstance(reading, Reading) else None
        if title != self.rules.TITLE_READY and not self.engine.cli_idle():
            return
        if turn.interrupt_at is not None:
            return
        rows = list(self.host.terminal.display)
        start = self.rules.find_prompt(rows, turn.text if len(turn.text) < 800 else None)
        if start is not None and self.rules.cancelled_after(rows, start):
            self.engine.note_interrupt("cli")
            return
        chat = self.follower.tracker
        if chat.cancelled:  # a denied tool call: the CLI stopped the turn there
            self.engine.interrupted(turn.last_text or chat.content)
            return
        error = chat.error
        if error is not None:
            shown = self.rules.error_lines(rows, start)
            extra = f" (the CLI showed: {shown[-1]})" if shown and error.text not in shown[-1] else ""
            self.engine.failed(error.text + extra, "api_error")
            return
        pending = chat.pending
        if pending is None:
            return
        content = pending.text
        if content and content != turn.last_text:
            self.engine.set_text(content)
        self.engine.complete(content, pending.data.get("usage"), "transcript")

    def on_tick(self, turn: Turn) -> None:
        """Also: an Esc the CLI did not act on (seen live: an Esc soon after the prompt was submitted can be lost
        while the answer streams on for good) is pressed again while the CLI still reads busy."""
        super().on_tick(turn)
        if turn.interrupt_at is None or self.engine.turn is not turn or not self.engine.busy():
            return
        now = self.engine.now()
        tries = int(turn.data.get("esc_again", 0))
        if tries < ESC_AGAIN_MAX and now - float(turn.data.get("esc_at", turn.interrupt_at)) >= ESC_AGAIN:
            self.host.log.info(
                "qwen: still busy %.1fs after an interrupt: Esc again", now - turn.interrupt_at
            )
            self.host.write(ESC)
            turn.data["esc_again"], turn.data["esc_at"] = tries + 1, now

    def clear_keys(self) -> tuple[bytes, ...]:
        """A cancel puts the prompt back into the input box: Esc twice empties it (one Esc alone leaves the
        text, Ctrl+U clears one line of a multi-line prompt, Ctrl+C would arm the exit guard; seen live)."""
        return (ESC, ESC)

    # ------------------------------------------------------------------------------------------ records
    def resume_record(self) -> tuple[str | None, Path | None]:
        sid = self.session_id
        return sid, (find_chat_file(self.home, sid, self.cwd) if sid else None)

    def info_fields(self) -> dict[str, Any]:
        fields = super().info_fields()
        fields["qwen_session_id"] = fields.pop("gemini_session_id", self.session_id)
        return fields

    @staticmethod
    def replay_setup(capture: Any, home: Path) -> tuple[dict[str, Any], Path]:
        """For `litbridge replay`: a private `QWEN_HOME`, the recorded session id pinned as the live driver would
        (unless the recording resumed one), and the chats folder the recorded lines go to."""
        qdir = home / ".qwen"
        qdir.mkdir(parents=True, exist_ok=True)
        args = list(capture.args)
        if flag_value(args, ("--resume", "-r", "--session-id")) is None:
            for _t, _name, line in capture.transcript[:1]:
                try:
                    sid = json.loads(line).get("sessionId")
                except ValueError:
                    sid = None
                if isinstance(sid, str):
                    args += ["--session-id", sid]
        options = {
            "env": {"HOME": str(home), "QWEN_HOME": str(qdir)},
            "args": args,
            "cli_version": recorded_version(capture.chunks, CLI.logo),
        }
        return options, qdir / "projects" / project_id(capture.cwd) / "chats"


if TYPE_CHECKING:
    _LAUNCH_HOST: type[LaunchHost] = QwenDriver  # what the launch plug-ins read and set is here
