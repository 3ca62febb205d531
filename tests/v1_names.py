"""The v1 wire names (PROTOCOL.md v1), written out here on purpose rather than read from `litbridge.protocol`: the
versioning rule is that these sets only ever grow, so the tests compare the code against this frozen copy."""

from __future__ import annotations

V1_COMMANDS = frozenset(
    {
        "create",
        "send",
        "input",
        "keystroke",
        "answer",
        "interrupt",
        "list",
        "dump",
        "kill",
        "ping",
        "hello",
    }
)
V1_EVENTS = frozenset(
    {
        "monitor_ready",
        "ready",
        "state",
        "accepted",
        "replace",
        "thinking",
        "tool_use",
        "tool_result",
        "complete",
        "interrupted",
        "turn_error",
        "question",
        "question_closed",
        "dialog_blocked",
        "dialog_cleared",
        "dialog_released",
        "unknown_dialog",
        "reaped_idle",
        "dialog_dismissed",
        "startup_hold",
        "input_sent",
        "keystroke_sent",
        "answer_sent",
        "killed",
        "exited",
        "error",
        "pong",
        "sessions",
        "dump",
        "capabilities",
    }
)
