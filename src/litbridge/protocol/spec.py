"""The wire protocol v1 as data: every command and event, its fields, types, replies and origin.

This table is the single source for command validation (`validate_command`), the `commands`/`events`
lists of `monitor_ready`, the JSON Schema export (`protocol/jsonschema.py`) and the docs. It knows no
sockets, sessions or CLIs.

Field types are JSON-Schema-like names: "string", "integer", "number", "boolean", "object", "array",
"any". Arrays carry `items` (element type); objects may carry `values` (type of every value). A field
may accept several types (`type` is then a tuple, e.g. `("array", "string")` for `subscribe`).
`added_in` is the protocol version that introduced the item; `new` marks litbridge additions to the
lit-bridge-rs protocol (clients of that daemon never send/expect them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = 1
MAX_LINE = 1024 * 1024
BUFFER_EVENTS = 5000
TEXT_LIMIT = 5000
"""Characters of a tool result, an echoed prompt or a reasoning block an event carries (the rest cut, marked by a
trailing `…`): every event stays in the replay ring."""

# Error codes carried by `error.code`: the one list every component raises from (`DriverError` and
# `SessionCommandError` reject any other code).
ERROR_CODES = (
    "bad_json",
    "unknown_command",
    "bad_field",
    "session_not_found",
    "spawn_failed",
    "cli_not_found",
    "bad_key",
    "no_question",
    "too_large",
    "slow_consumer",
    "busy",
    "unauthorized",
    "no_turn",
    "internal",
    "write_queue_full",
    "cli_stopped",
    "timeout",  # a CLI did not reach its prompt (startup) in time
    "startup_dialog",  # a startup dialog the driver should answer could not be answered
    "no_web_view",  # web_login on a daemon started without --web
    "worktree_failed",  # create{worktree}: the git worktree could not be made (nothing was left behind)
)

TURN_ERROR_KINDS = ("api_error", "cli_exited", "timeout")
"""`turn_error.kind`: the CLI reported an API error, the CLI exited, or the turn/submit timed out."""

STATES = ("starting", "idle", "thinking", "responding", "dialog", "dead", "stopped")


class ProtocolError(Exception):
    """A client mistake, reported as `error{code,message}`; never fatal for the daemon."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


GRID = (200, 50)
"""Columns x rows of every session's terminal (PTY and emulator); attach viewers are told to match it."""
ATTACH_SUFFIX = ".attach"
"""The attach socket of control socket PATH is PATH + this suffix (TCP: control port + 1)."""

MAX_NAME_BYTES = 256
"""Longest session name or channel id (UTF-8 bytes): a name is repeated in every event and log line."""

DEFAULT_CLI = "claude"
"""The CLI a `create` without `cli`/`exe` starts (lit-bridge compatibility); decided here only."""


@dataclass(frozen=True)
class Field:
    type: str | tuple[str, ...]
    required: bool = False
    doc: str = ""
    items: str | None = None
    values: str | None = None
    default: Any = None
    enum: tuple[Any, ...] | None = None
    new: bool = False
    feature: bool = False
    """A new event field listed in `monitor_ready.features` as `event.field`: one a client may rely on once the
    daemon says it fills it (new command fields are always listed)."""


@dataclass(frozen=True)
class Command:
    name: str
    doc: str
    fields: dict[str, Field] = field(default_factory=dict)
    replies: tuple[str, ...] = ()
    per_session: bool = True
    added_in: int = 1
    new: bool = False


@dataclass(frozen=True)
class Event:
    name: str
    doc: str
    fields: dict[str, Field] = field(default_factory=dict)
    per_session: bool = True
    added_in: int = 1
    new: bool = False


_S = Field("string")
_ID = Field(("string", "integer"), doc="client request id; echoed as `re` on replies and errors", new=True)
_SESSION_FIELDS = {
    "session": Field(
        "string",
        required=True,
        doc="session name; the key is `session` or `session:channel_id` (so `a:b` and `a` + channel `b` are one "
        f"session); at most {MAX_NAME_BYTES} bytes (UTF-8) and no control characters (C0, DEL, C1): else "
        "`bad_field`",
    ),
    "channel_id": Field(
        "string",
        doc=f"optional sub-session id; at most {MAX_NAME_BYTES} bytes, no control characters, as `session`",
    ),
}

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "create",
            "Start a CLI session (or reuse a live one with the same key).",
            {
                **_SESSION_FIELDS,
                "cli": Field(
                    "string",
                    default=DEFAULT_CLI,
                    doc="CLI name or executable; `exe` is an alias; an empty or blank value is `bad_field`",
                ),
                "exe": Field("string", doc="alias of `cli` (wins when both are given); not empty, as `cli`"),
                "args": Field("array", items="string", default=[], doc="extra argv"),
                "working_dir": Field("string", doc="cwd of the CLI (default $HOME)"),
                "env": Field("object", values="string", default={}, doc="env applied after the defaults"),
                "model": Field(
                    "string",
                    doc="the CLI's model flag: `--model <model>` for claude, gemini and rift, `-m <model>` for "
                    "codex (claude, codex and gemini add none when `args` already has the flag); the generic "
                    "driver passes nothing and only reports it (`ready.model`, `list`)",
                    new=True,
                ),
                "worktree": Field(
                    ("boolean", "string"),
                    doc="run the CLI in a new git worktree of `working_dir`'s repository: `true` for branch "
                    "`litbridge/<session>`, or the new branch's name; the session name must then be a plain "
                    "path component (letters, digits, `.` `_` `-`), else `bad_field`; `ready.worktree` says "
                    "where (docs/worktrees.md)",
                    new=True,
                ),
                "worktree_allow_dirty": Field(
                    "boolean",
                    default=False,
                    doc="make the worktree even when the main checkout has uncommitted changes or untracked "
                    "files (else `worktree_failed`: the worktree starts from HEAD without them)",
                    new=True,
                ),
            },
            replies=("ready", "error"),
        ),
        Command(
            "send",
            "Send a message as a turn; queued FIFO while a turn runs or input is not live.",
            {**_SESSION_FIELDS, "content": Field("string", default="", doc="message text")},
            replies=("accepted", "state", "replace", "complete", "interrupted", "turn_error", "error"),
        ),
        Command(
            "input",
            "Type text + Enter without observing (slash commands).",
            {**_SESSION_FIELDS, "content": Field("string", default="")},
            replies=("input_sent", "error"),
        ),
        Command(
            "keystroke",
            "Send named keys (tmux names accepted); unknown names are an error and nothing is typed.",
            {**_SESSION_FIELDS, "keys": Field("array", required=True, items="string")},
            replies=("keystroke_sent", "error"),
        ),
        Command(
            "answer",
            "Answer an open question by id, digit, option label or text.",
            {
                **_SESSION_FIELDS,
                "question_id": Field("string", new=True),
                "digit": Field(
                    ("string", "integer"),
                    doc="exactly one digit: a JSON string as `question.options[].digit` carries it, or an integer",
                ),
                "option": Field("string", doc="option label", new=True),
                "text": Field("string", doc="free text answer", new=True),
            },
            replies=("answer_sent", "question_closed", "error"),
        ),
        Command(
            "interrupt",
            "Interrupt the running turn (Esc for TUIs); the turn ends with `interrupted` (at the latest 10 s later,"
            " even if the CLI never reports idle).",
            dict(_SESSION_FIELDS),
            replies=("interrupted", "error"),
            new=True,
        ),
        Command("list", "List the sessions.", {}, replies=("sessions",), per_session=False),
        Command(
            "dump",
            "The screen and bookkeeping of one session.",
            dict(_SESSION_FIELDS),
            replies=("dump", "error"),
        ),
        Command(
            "kill",
            "Kill the CLI and its process group (reaped).",
            {**_SESSION_FIELDS, "store_resume": Field("boolean", default=False)},
            replies=("killed", "error"),
        ),
        Command("ping", "Liveness check.", {}, replies=("pong",), per_session=False),
        Command(
            "hello",
            "Subscribe / replay / authenticate (TCP); idempotent.",
            {
                "subscribe": Field(("array", "string"), items="string", doc='session keys, or "*" for all'),
                "since_seq": Field("integer", doc="replay buffered events with seq greater than this"),
                "token": Field("string", doc="TCP auth token (from the token file); legacy, see `auth`"),
                "auth": Field(
                    "object",
                    doc="TCP proof-first auth, token never sent: first `{nonce}`, then `{proof}` (docs/protocol.md)",
                    new=True,
                ),
                "deltas": Field(
                    "boolean",
                    doc="`true`: this connection gets `append` (the text added since what it was last sent) "
                    "instead of `replace`; `false` turns it off again (docs/protocol.md, Streamed text)",
                    new=True,
                ),
            },
            replies=("capabilities", "error"),
            per_session=False,
            new=True,
        ),
        Command(
            "web_login",
            "A one-time login link for the web view (`serve --web`): spent on first use, expires unused.",
            {},
            replies=("web_login", "error"),
            per_session=False,
            new=True,
        ),
    )
}

_Q_OPTIONS = Field(
    "array",
    items="object",
    doc='[{digit,label,selected}]: `digit` always a string (`"1"`, what `answer{digit}` takes back), `selected` a '
    "boolean (where the CLI's cursor is; at most one)",
)
_TURN = Field("string", doc="turn id of the send", new=True)
# Additive handshake fields (no protocol_version bump). Named last_seq, not seq: a direct reply carries no
# `seq`, and clients de-duplicate events by `seq`.
_LAST_SEQ = Field("integer", doc="the newest seq published so far (0: none yet)", new=True)
_DAEMON_ID = Field("string", doc="random per daemon start; a change means seq numbering restarted", new=True)
_FEATURES = Field(
    "array",
    items="string",
    doc="the **new** command fields this daemon understands, as `command.field` (e.g. `create.worktree`): "
    "a daemon ignores fields it does not know, so check here before relying on one; and the new event fields "
    "a client may rely on, as `event.field` (e.g. `accepted.content`)",
    new=True,
)
_WORKTREE = Field("object", doc="the session's git worktree: {path, branch}", new=True)
_MARKDOWN = Field(
    "boolean",
    doc="the CLI answers in markdown (an AI CLI): render `complete.content` as markdown; false (a shell, a REPL): "
    "show it as it is. Absent from an older daemon",
    new=True,
)
_WORKTREE_END = Field(
    "object",
    doc="what became of the session's worktree: {path, branch, removed, reason}: removed only when clean (no "
    "uncommitted changes or untracked files), else kept and `reason` says why; the branch is always kept",
    new=True,
)

EVENTS: dict[str, Event] = {
    e.name: e
    for e in (
        Event(
            "monitor_ready",
            "First line on every control connection.",
            {
                "sessions": Field("integer", required=True),
                "buffered": Field("integer", required=True),
                "version": Field("string", required=True),
                "protocol_version": Field("integer", required=True, new=True),
                "commands": Field("array", items="string", required=True, new=True),
                "events": Field("array", items="string", required=True, new=True),
                "clis": Field("array", items="string", required=True, new=True),
                "limits": Field("object", required=True, doc="{max_line, buffer}", new=True),
                "last_seq": _LAST_SEQ,
                "daemon_id": _DAEMON_ID,
                "features": _FEATURES,
            },
            per_session=False,
        ),
        Event(
            "ready",
            "create finished: startup handled, prompt live (or reused).",
            {
                "state": Field("string"),
                "model": Field(("string", "null")),
                "resumed": Field("boolean"),
                "reused": Field("boolean"),
                "worktree": _WORKTREE,
                "markdown": _MARKDOWN,
            },
        ),
        Event(
            "state",
            "Detected state changed.",
            {
                "from": Field("string", enum=STATES),
                "to": Field("string", enum=STATES),
                "turn_id": Field(
                    "string",
                    doc="the running turn, when there is one (how a queued send's handle sees its turn begin)",
                    new=True,
                ),
            },
        ),
        Event(
            "accepted",
            "A send was taken (queued: waiting behind a turn or for live input).",
            {
                "turn_id": _TURN,
                "queued": Field("boolean"),
                "duplicate": Field("boolean", new=True),
                "organic": Field(
                    "boolean", doc="a prompt typed into the CLI itself (attach), not a send", new=True
                ),
                "content": Field(
                    "string",
                    doc="the prompt's text: what the send carried, or for an organic turn what the CLI's "
                    "transcript recorded (absent when the driver reads none, e.g. the generic one); cut to "
                    f"{TEXT_LIMIT} characters, then `…`",
                    new=True,
                    feature=True,
                ),
            },
            new=True,
        ),
        Event(
            "replace",
            "Full response text so far (replace, don't append). When the answer is read off the screen"
            " (`complete.source` `screen` or `quiescence`), the last `replace` before `complete` carries its"
            " `content`.",
            {"text": _S, "turn_id": _TURN},
        ),
        Event(
            "append",
            "Sent instead of `replace` to a connection that asked for it (`hello{deltas:true}`): the turn's text "
            "becomes its text cut to `offset` characters, then `text` appended.",
            {
                "turn_id": _TURN,
                "offset": Field(
                    "integer",
                    required=True,
                    doc="Unicode code points of the turn's text this connection was sent that stay (0: a new "
                    "text; less than its length: earlier text changed and is cut there first)",
                ),
                "text": Field("string", required=True, doc="what follows at `offset`"),
            },
            new=True,
        ),
        Event("thinking", "Spinner / progress relay.", {"text": _S}),
        Event(
            "reasoning",
            "The model's reasoning, as the CLI's transcript recorded it (Claude's `thinking` blocks, Codex's "
            "`reasoning` summaries): one event per block, in order; not the spinner text of `thinking`.",
            {
                "turn_id": _TURN,
                "text": Field(
                    "string", required=True, doc=f"the block's text, cut to {TEXT_LIMIT} characters, then `…`"
                ),
            },
            new=True,
        ),
        Event(
            "tool_use",
            "Tool call from the transcript.",
            {"tool_use_id": _S, "name": _S, "input": Field("any"), "turn_id": _TURN},
        ),
        Event(
            "tool_result",
            "Tool result (content cut to 5000 chars).",
            {"tool_use_id": _S, "content": _S, "is_error": Field("boolean"), "turn_id": _TURN},
        ),
        Event(
            "complete",
            "The turn ended normally.",
            {
                "content": _S,
                "turn_id": _TURN,
                "usage": Field(
                    ("object", "null"),
                    doc="{input_tokens,output_tokens,cache_read_tokens,cache_creation_tokens}",
                ),
                "source": Field(
                    "string",
                    enum=("transcript", "screen", "quiescence"),
                    doc="what ended the turn: the CLI's transcript, its screen (prompt back, shell marks), or "
                    "output silence (the generic driver's fallback)",
                    new=True,
                ),
                "exit_code": Field(
                    ("integer", "null"),
                    doc="a shell command's exit status (generic driver, shell integration)",
                    new=True,
                ),
            },
        ),
        Event("interrupted", "The turn was interrupted.", {"turn_id": _TURN, "content": _S}, new=True),
        Event(
            "turn_error",
            "The turn failed.",
            {
                "turn_id": _TURN,
                "message": _S,
                "kind": Field("string", enum=TURN_ERROR_KINDS),
                "detail": Field(
                    "string",
                    doc="what the CLI showed when the turn failed (e.g. its retry spinner)",
                    new=True,
                ),
            },
            new=True,
        ),
        Event(
            "question",
            "The CLI asks something.",
            {
                "question_id": Field("string", new=True),
                "kind": Field("string", enum=("permission", "trust", "choice", "text"), new=True),
                "text": _S,
                "options": _Q_OPTIONS,
                "detail": Field(
                    "any",
                    doc="what the CLI shows with the question: a string, or an object of named strings when the "
                    "driver reads named facts (Codex approvals `{command,reason,environment}`; rift its own shapes)",
                    new=True,
                ),
                "source": _S,
            },
        ),
        Event(
            "question_closed",
            "A question was answered, dismissed or orphaned.",
            {"question_id": _S, "reason": Field("string", enum=("answered", "dismissed", "orphaned"))},
            new=True,
        ),
        Event("dialog_blocked", "A send hit a modal.", {"dialog": _S}),
        Event("dialog_cleared", "The dialog went away.", {}),
        Event("dialog_released", "A held message was dispatched.", {}),
        Event("unknown_dialog", "An unparseable modal.", {"dialog": _S}),
        Event(
            "reaped_idle",
            "Idle reaper killed the session, or an exited session was removed after its grace period.",
            {
                "reason": Field("string", enum=("exited",), doc="`exited`: the CLI had exited", new=True),
                "exit_code": Field(("integer", "null"), new=True),
                "worktree": _WORKTREE_END,
            },
        ),
        Event(
            "dialog_dismissed",
            "A startup dialog was handled automatically.",
            {"dialog": _S, "keys": Field("array", items="string")},
        ),
        Event(
            "startup_hold", "A message is held until the CLI's input is live.", {"carried": Field("boolean")}
        ),
        Event("input_sent", "input ack.", {}),
        Event("keystroke_sent", "keystroke ack.", {"keys": Field("array", items="string")}),
        Event(
            "answer_sent",
            "answer ack: the question answered and the digit of the option picked (also for answers by option).",
            {
                "digit": Field(("string", "null"), doc="null only for a free-text answer"),
                "question_id": Field(
                    ("string", "null"), doc="null only when the CLI chose which question", new=True
                ),
            },
        ),
        Event(
            "killed",
            "kill ack; the process group is gone.",
            {
                "exit_code": Field(("integer", "null")),
                "resume_stored": Field(
                    "boolean",
                    doc="only after `store_resume:true`: the resume token is stored on disk (a later create of "
                    "the key resumes, also after a daemon restart); false when the CLI gave no token or it could "
                    "not be written (`resume_error` says which)",
                    new=True,
                ),
                "resume_error": Field("string", doc="why `resume_stored` is false", new=True),
                "worktree": _WORKTREE_END,
            },
        ),
        Event(
            "exited",
            "The CLI exited by itself; state -> dead.",
            {"exit_code": Field(("integer", "null")), "stderr_tail": _S},
            new=True,
        ),
        Event(
            "error",
            "A command failed or a client mistake.",
            {
                "message": Field("string", required=True),
                "code": Field("string", enum=ERROR_CODES, new=True),
                "re": Field("any", new=True),
            },
            per_session=False,
        ),
        Event(
            "auth_challenge",
            "TCP reply to hello{auth:{nonce}} (and to the attach port's selector {auth:{nonce}}): the daemon's "
            "nonce and its proof that it knows the token.",
            {
                "nonce": Field("string", required=True, doc="the daemon's nonce (64 hex digits)"),
                "proof": Field("string", required=True, doc="HMAC-SHA256 hex (protocol/auth.py)"),
                "re": Field(("string", "integer"), doc="the hello's `id`"),
            },
            per_session=False,
            new=True,
        ),
        Event(
            "replay_gap",
            "hello{since_seq} reply, before the replayed events: seqs from_seq..to_seq left the ring.",
            {"from_seq": Field("integer", required=True), "to_seq": Field("integer", required=True)},
            per_session=False,
            new=True,
        ),
        Event("pong", "ping reply.", {}, per_session=False),
        Event(
            "web_login",
            "web_login reply.",
            {
                "url": Field("string", required=True, doc="the page's address with `#code=` (one use)"),
                "expires_in": Field("integer", required=True, doc="seconds the code stays valid unused"),
            },
            per_session=False,
            new=True,
        ),
        Event(
            "sessions",
            "list reply.",
            {
                "sessions": Field(
                    "array",
                    items="object",
                    doc="one object per session (name, state, cli, model, pid, …; `markdown` as in `ready` "
                    "(**new**); `worktree` {path, branch} when it runs in one)",
                )
            },
            per_session=False,
        ),
        Event(
            "dump",
            "dump reply.",
            {
                "state": _S,
                "capture": _S,
                "count": Field("integer"),
                "observing": Field("boolean"),
                "cursor": Field("object", new=True),
                "modes": Field("object", new=True),
                "osc_state": Field(("object", "null"), new=True),
                "driver": Field("string", new=True),
                "cli_version": Field(("string", "null"), new=True),
                "transcript_path": Field(("string", "null"), new=True),
                "turn_id": Field(("string", "null"), new=True),
                "queued": Field("integer", new=True),
            },
        ),
        Event(
            "capabilities",
            "hello reply.",
            {
                "protocol_version": Field("integer"),
                "commands": Field("array", items="string"),
                "events": Field("array", items="string"),
                "clis": Field("array", items="string"),
                "limits": Field("object"),
                "subscribed": Field(("array", "string")),
                "replayed": Field("integer"),
                "oldest_seq": Field(("integer", "null")),
                "last_seq": _LAST_SEQ,
                "daemon_id": _DAEMON_ID,
                "features": _FEATURES,
                "deltas": Field(
                    "boolean",
                    doc="whether this connection gets `append` instead of `replace` (only when the hello carried "
                    "`deltas`)",
                    new=True,
                ),
            },
            per_session=False,
            new=True,
        ),
    )
}

# Fields every per-session event may carry (added by the builders / the hub).
COMMON_EVENT_FIELDS = {
    "event": Field("string", required=True),
    "session": Field("string", doc="session key"),
    "channel_id": Field("string"),
    "seq": Field("integer", doc="per-daemon increasing number of session events", new=True),
    "re": Field(("string", "integer"), doc="the `id` of the command this replies to", new=True),
}


def command_names() -> list[str]:
    return list(COMMANDS)


def event_names() -> list[str]:
    return list(EVENTS)


def feature_names() -> list[str]:
    """`monitor_ready.features`: every **new** command field, as `command.field`, then the event fields marked
    `feature`, as `event.field` (derived from the tables, never listed by hand)."""
    commands = [f"{c.name}.{name}" for c in COMMANDS.values() for name, f in c.fields.items() if f.new]
    return commands + [
        f"{e.name}.{name}" for e in EVENTS.values() for name, f in e.fields.items() if f.feature
    ]


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _type_ok(value: Any, types: str | tuple[str, ...]) -> bool:
    for t in (types,) if isinstance(types, str) else types:
        if t == "any":
            return True
        py = _PY_TYPES[t]
        if isinstance(value, bool) and t in ("integer", "number"):
            continue
        if isinstance(value, py):
            return True
    return False


def _type_name(types: str | tuple[str, ...]) -> str:
    return types if isinstance(types, str) else " or ".join(types)


def validate_command(msg: Any) -> tuple[Command, dict[str, Any]]:
    """Check a decoded line against the table; returns (command, fields with defaults applied).

    Unknown extra fields are kept (drivers read extras such as `preapprove`); `null` counts as absent.
    Raises ProtocolError(unknown_command | bad_field).
    """
    if not isinstance(msg, dict):
        raise ProtocolError("unknown_command", "unknown command: (not a JSON object)")
    name = msg.get("cmd")
    if not isinstance(name, str) or name not in COMMANDS:
        shown = "" if name is None else name if isinstance(name, str) else repr(name)
        raise ProtocolError("unknown_command", f"unknown command: {shown}")
    cmd = COMMANDS[name]
    out: dict[str, Any] = {k: v for k, v in msg.items() if v is not None}
    for fname, spec in cmd.fields.items():
        value = out.get(fname)
        if value is None:
            if spec.required:
                raise ProtocolError("bad_field", f"{name}: missing required field '{fname}'")
            if spec.default is not None:
                out[fname] = type(spec.default)(spec.default)
            continue
        if not _type_ok(value, spec.type):
            raise ProtocolError(
                "bad_field",
                f"{name}: field '{fname}' must be {_type_name(spec.type)}, got {type(value).__name__}",
            )
        if spec.items and isinstance(value, list):
            for item in value:
                if not _type_ok(item, spec.items):
                    raise ProtocolError("bad_field", f"{name}: every item of '{fname}' must be {spec.items}")
        if spec.values and isinstance(value, dict):
            for k, v in value.items():
                if not _type_ok(v, spec.values):
                    raise ProtocolError("bad_field", f"{name}: value of '{fname}.{k}' must be {spec.values}")
    if "id" in out and not _type_ok(out["id"], _ID.type):
        raise ProtocolError("bad_field", f"{name}: field 'id' must be string or integer")
    return cmd, out


def session_key(fields: dict[str, Any]) -> str:
    """`session` or `session:channel_id` (a string channel_id counts, even "")."""
    name = fields.get("session", "")
    ch = fields.get("channel_id")
    return f"{name}:{ch}" if isinstance(ch, str) else name
