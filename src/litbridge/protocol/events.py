"""One builder per event kind, so no module assembles event dicts by hand.

Per-session builders take `session` (the key) and optional `channel_id`; every builder takes an optional
`re` (the id of the command it answers). The hub adds `seq`. Field names follow `protocol/spec.py`.
"""

from __future__ import annotations

from typing import Any

from litbridge import __version__
from litbridge.protocol.spec import (
    BUFFER_EVENTS,
    MAX_LINE,
    PROTOCOL_VERSION,
    TEXT_LIMIT,
    command_names,
    event_names,
    feature_names,
)

Ev = dict[str, Any]


def _ev(
    event_name: str, session: str | None = None, channel_id: str | None = None, re: Any = None, **fields: Any
) -> Ev:
    out: Ev = {"event": event_name}
    if session is not None:
        out["session"] = session
    if channel_id is not None:
        out["channel_id"] = channel_id
    out.update(fields)
    if re is not None:
        out["re"] = re
    return out


def limits() -> dict[str, int]:
    return {"max_line": MAX_LINE, "buffer": BUFFER_EVENTS}


# --- connection-level -------------------------------------------------------------------------------


def _handshake(last_seq: int | None, daemon_id: str | None) -> Ev:
    """What monitor_ready and capabilities both advertise; the additive instance fields when known."""
    out: Ev = {
        "protocol_version": PROTOCOL_VERSION,
        "version": __version__,
        "commands": command_names(),
        "events": event_names(),
        "features": feature_names(),
        "limits": limits(),
    }
    if last_seq is not None:
        out["last_seq"] = last_seq
    if daemon_id is not None:
        out["daemon_id"] = daemon_id
    return out


def monitor_ready(
    sessions: int, buffered: int, clis: list[str], last_seq: int | None = None, daemon_id: str | None = None
) -> Ev:
    return _ev(
        "monitor_ready", sessions=sessions, buffered=buffered, clis=clis, **_handshake(last_seq, daemon_id)
    )


def capabilities(
    clis: list[str],
    subscribed: list[str] | str,
    replayed: int,
    oldest_seq: int | None,
    re: Any = None,
    last_seq: int | None = None,
    daemon_id: str | None = None,
    deltas: bool | None = None,
) -> Ev:
    """`deltas`: said only to a hello that carried the field (what the connection gets from now on)."""
    out = _ev(
        "capabilities",
        re=re,
        clis=clis,
        subscribed=subscribed,
        replayed=replayed,
        oldest_seq=oldest_seq,
        **_handshake(last_seq, daemon_id),
    )
    if deltas is not None:
        out["deltas"] = deltas
    return out


def error(
    message: str, code: str, re: Any = None, session: str | None = None, channel_id: str | None = None
) -> Ev:
    return _ev("error", session, channel_id, re, message=message, code=code)


def auth_challenge(nonce: str, proof: str, re: Any = None) -> Ev:
    return _ev("auth_challenge", re=re, nonce=nonce, proof=proof)


def pong(re: Any = None) -> Ev:
    return _ev("pong", re=re)


def sessions(items: list[dict[str, Any]], re: Any = None) -> Ev:
    return _ev("sessions", re=re, sessions=items)


def web_login(url: str, expires_in: int, re: Any = None) -> Ev:
    return _ev("web_login", re=re, url=url, expires_in=expires_in)


# --- per-session ------------------------------------------------------------------------------------


def ready(
    session: str,
    channel_id: str | None,
    *,
    model: str | None,
    resumed: bool = False,
    re: Any = None,
    state: str = "starting",
    **extra: Any,
) -> Ev:
    """`state`: the session's state when `ready` is sent (`idle`, or `dialog` behind a start-up question)."""
    return _ev("ready", session, channel_id, re, state=state, model=model, resumed=resumed, **extra)


def ready_reused(
    session: str,
    channel_id: str | None,
    *,
    model: str | None,
    re: Any = None,
    state: str | None = None,
    **extra: Any,
) -> Ev:
    if state is not None:
        extra["state"] = state
    return _ev("ready", session, channel_id, re, reused=True, model=model, **extra)


def state(session: str, channel_id: str | None, from_: str, to: str, turn_id: str | None = None) -> Ev:
    ev = _ev("state", session, channel_id, **{"from": from_, "to": to})
    if turn_id is not None:
        ev["turn_id"] = turn_id
    return ev


def accepted(
    session: str,
    channel_id: str | None,
    turn_id: str,
    queued: bool,
    re: Any = None,
    duplicate: bool = False,
    organic: bool = False,
    content: str | None = None,
) -> Ev:
    ev = _ev("accepted", session, channel_id, re, turn_id=turn_id, queued=queued)
    if duplicate:
        ev["duplicate"] = True
    if organic:
        ev["organic"] = True
    if content is not None:
        ev["content"] = cut(content)
    return ev


def cut(text: str) -> str:
    """A text as an event carries it: cut to TEXT_LIMIT characters, then `…`."""
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


def replace(session: str, channel_id: str | None, text: str, turn_id: str | None) -> Ev:
    return _ev("replace", session, channel_id, text=text, turn_id=turn_id)


def append(session: str, channel_id: str | None, turn_id: str | None, offset: int, text: str) -> Ev:
    """A `replace` for a connection that asked for deltas: the turn's text cut to `offset`, then `text`."""
    return _ev("append", session, channel_id, turn_id=turn_id, offset=offset, text=text)


def thinking(session: str, channel_id: str | None, text: str) -> Ev:
    return _ev("thinking", session, channel_id, text=text)


def tool_use(
    session: str, channel_id: str | None, tool_use_id: str, name: str, input: Any, turn_id: str | None
) -> Ev:
    return _ev(
        "tool_use", session, channel_id, tool_use_id=tool_use_id, name=name, input=input, turn_id=turn_id
    )


def reasoning(session: str, channel_id: str | None, text: str, turn_id: str | None) -> Ev:
    return _ev("reasoning", session, channel_id, text=cut(text), turn_id=turn_id)


def tool_result(
    session: str, channel_id: str | None, tool_use_id: str, content: str, is_error: bool, turn_id: str | None
) -> Ev:
    content = cut(content)
    return _ev(
        "tool_result",
        session,
        channel_id,
        tool_use_id=tool_use_id,
        content=content,
        is_error=is_error,
        turn_id=turn_id,
    )


def complete(
    session: str,
    channel_id: str | None,
    content: str,
    turn_id: str | None,
    usage: dict[str, int] | None,
    source: str,
    exit_code: int | None = None,
) -> Ev:
    ev = _ev("complete", session, channel_id, content=content, turn_id=turn_id, source=source)
    if usage is not None:
        ev["usage"] = usage
    if exit_code is not None:
        ev["exit_code"] = exit_code
    return ev


def interrupted(session: str, channel_id: str | None, turn_id: str, content: str, re: Any = None) -> Ev:
    return _ev("interrupted", session, channel_id, re, turn_id=turn_id, content=content)


def turn_error(
    session: str, channel_id: str | None, turn_id: str, message: str, kind: str, detail: str | None = None
) -> Ev:
    out = _ev("turn_error", session, channel_id, turn_id=turn_id, message=message, kind=kind)
    if detail:  # additive: only when a driver has something the CLI showed
        out["detail"] = detail
    return out


def question(
    session: str,
    channel_id: str | None,
    question_id: str,
    kind: str,
    text: str,
    options: list[dict[str, Any]],
    detail: Any = None,
    source: str | None = None,
) -> Ev:
    return _ev(
        "question",
        session,
        channel_id,
        question_id=question_id,
        kind=kind,
        text=text,
        options=options,
        detail=detail,
        source=source or "cli-dialog",
    )


def question_closed(session: str, channel_id: str | None, question_id: str, reason: str) -> Ev:
    return _ev("question_closed", session, channel_id, question_id=question_id, reason=reason)


def dialog_blocked(session: str, channel_id: str | None, dialog: str) -> Ev:
    return _ev("dialog_blocked", session, channel_id, dialog=dialog)


def dialog_cleared(session: str, channel_id: str | None) -> Ev:
    return _ev("dialog_cleared", session, channel_id)


def dialog_released(session: str, channel_id: str | None) -> Ev:
    return _ev("dialog_released", session, channel_id)


def unknown_dialog(session: str, channel_id: str | None, dialog: str) -> Ev:
    return _ev("unknown_dialog", session, channel_id, dialog=dialog)


def dialog_dismissed(session: str, channel_id: str | None, dialog: str, keys: list[str]) -> Ev:
    return _ev("dialog_dismissed", session, channel_id, dialog=dialog, keys=keys)


def reaped_idle(
    session: str,
    channel_id: str | None,
    reason: str | None = None,
    exit_code: int | None = None,
    worktree: dict[str, Any] | None = None,
) -> Ev:
    """`worktree`: what became of the session's worktree (`Worktrees.release`), when it had one."""
    extra: Ev = {} if worktree is None else {"worktree": worktree}
    if reason is None:
        return _ev("reaped_idle", session, channel_id, **extra)
    return _ev("reaped_idle", session, channel_id, reason=reason, exit_code=exit_code, **extra)


def replay_gap(from_seq: int, to_seq: int, re: Any = None) -> Ev:
    return _ev("replay_gap", re=re, from_seq=from_seq, to_seq=to_seq)


def startup_hold(session: str, channel_id: str | None, carried: bool = False) -> Ev:
    ev = _ev("startup_hold", session, channel_id)
    if carried:
        ev["carried"] = True
    return ev


def input_sent(session: str, channel_id: str | None, re: Any = None) -> Ev:
    return _ev("input_sent", session, channel_id, re)


def keystroke_sent(session: str, channel_id: str | None, keys: list[str], re: Any = None) -> Ev:
    return _ev("keystroke_sent", session, channel_id, re, keys=keys)


def answer_sent(
    session: str, channel_id: str | None, digit: str | None, question_id: str | None, re: Any = None
) -> Ev:
    return _ev("answer_sent", session, channel_id, re, digit=digit, question_id=question_id)


def killed(session: str, channel_id: str | None, exit_code: int | None, re: Any = None, **resume: Any) -> Ev:
    """`resume`: `resume_stored` / `resume_error` after a `store_resume` kill; `worktree` when it had one."""
    return _ev("killed", session, channel_id, re, exit_code=exit_code, **resume)


def exited(session: str, channel_id: str | None, exit_code: int | None, stderr_tail: str) -> Ev:
    return _ev("exited", session, channel_id, exit_code=exit_code, stderr_tail=stderr_tail)


def dump(session: str, channel_id: str | None, re: Any = None, **fields: Any) -> Ev:
    return _ev("dump", session, channel_id, re, **fields)


def generic(name: str, session: str, channel_id: str | None, **fields: Any) -> Ev:
    """A driver-specific event (DriverHost.emit); `name` must be in the spec's event table."""
    if name not in event_names():
        raise ValueError(f"event {name!r} is not in protocol/spec.py")
    return _ev(name, session, channel_id, **fields)
