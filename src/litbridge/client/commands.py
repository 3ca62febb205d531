"""The command objects both clients send, whatever carries them (`Client` over the daemon's socket, the fleet's
`FleetDaemon` over NATS): one place for each command's fields and for reading an `error` reply.

>>> command("kill", "c1", kill_fields("work", store_resume=False, channel_id=None))
{'cmd': 'kill', 'id': 'c1', 'session': 'work'}
>>> keystroke_fields("work", "Enter", None)["keys"]
['Enter']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from litbridge.client.errors import LitbridgeError


def command(cmd: str, cmd_id: str, fields: dict[str, Any] | None) -> dict[str, Any]:
    """The command's object: `cmd`, `id`, then the fields, those whose value is None left out (absent)."""
    msg: dict[str, Any] = {"cmd": cmd, "id": cmd_id}
    msg.update({k: v for k, v in (fields or {}).items() if v is not None})
    return msg


def reply_error(ev: dict[str, Any]) -> LitbridgeError:
    """The exception for an `error` reply: the daemon's code and message, the event attached."""
    return LitbridgeError(str(ev.get("code") or "error"), str(ev.get("message", "")), ev)


def create_fields(
    session: str,
    cli: str | None,
    *,
    args: Sequence[str] | None,
    working_dir: str | os.PathLike[str] | None,
    env: dict[str, str] | None,
    model: str | None,
    channel_id: str | None,
    worktree: bool | str | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """`create`'s fields (`worktree=False` is no worktree: left out); `extra` passes driver options through."""
    return {
        "session": session,
        "channel_id": channel_id,
        "cli": cli,
        "args": list(args) if args is not None else None,
        "working_dir": os.fspath(working_dir) if working_dir is not None else None,
        "env": dict(env) if env is not None else None,
        "model": model,
        "worktree": worktree if worktree is not False else None,
        **extra,
    }


def answer_fields(
    session: str,
    *,
    question_id: str | None,
    digit: str | int | None,
    option: str | None,
    text: str | None,
    channel_id: str | None,
) -> dict[str, Any]:
    """`answer`'s fields (the wire's `digit` is a string)."""
    return {
        "session": session,
        "channel_id": channel_id,
        "question_id": question_id,
        "digit": str(digit) if digit is not None else None,
        "option": option,
        "text": text,
    }


def keystroke_fields(session: str, keys: Sequence[str] | str, channel_id: str | None) -> dict[str, Any]:
    """`keystroke`'s fields: a single string is one key name, not a sequence of letters."""
    key_list = [keys] if isinstance(keys, str) else list(keys)
    return {"session": session, "channel_id": channel_id, "keys": key_list}


def kill_fields(session: str, *, store_resume: bool, channel_id: str | None) -> dict[str, Any]:
    """`kill`'s fields (`store_resume` is sent only when asked for)."""
    return {"session": session, "channel_id": channel_id, "store_resume": store_resume or None}
