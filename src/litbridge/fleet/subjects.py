"""Every NATS name fleet mode uses, in one place: subjects, the stream, the KV bucket and its keys, headers.

Layout (fleet F, daemon D, session key encoded with `token()`):
  events    litbridge.F.ev.D.<token>   (`_` for events with no session), in stream LITBRIDGE_<F upper>
  commands  litbridge.F.cmd.D          (request/reply)
  registry  KV bucket litbridge_F: keys daemon.D and session.D.<token>
  inboxes   _INBOX_D.>                 (a daemon's replies: JetStream acks, registry reads)
"""

from __future__ import annotations

import re

DEFAULT_FLEET = "default"
PREFIX = "litbridge"
NO_SESSION = "_"  # the subject token of events that belong to no session (replay_gap, ...)

# Headers on every event message.
MSG_ID = "Nats-Msg-Id"  # "<daemon_id>:<seq>": JetStream drops a repeat within the duplicate window
DAEMON_HEADER = "Litbridge-Daemon"
SEQ_HEADER = "Litbridge-Seq"  # the event's seq (a replay_gap's from_seq)
TO_SEQ_HEADER = "Litbridge-To-Seq"  # a replay_gap's to_seq (only on those)


def run_of(msg_id: str) -> str:
    """The daemon run (`daemon_id`) of a Nats-Msg-Id: `<daemon_id>:<seq>` or `<daemon_id>:gap:<from_seq>`."""
    return msg_id.partition(":")[0]


_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def check_name(value: str, what: str) -> str:
    """A fleet or daemon name: 1-64 of [A-Za-z0-9_-] (it becomes a subject token, a stream and bucket name)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not 1-64 characters of A-Z a-z 0-9 _ -")
    return value


def token(session: str | None) -> str:
    """A session key as one subject token and KV key part: [A-Za-z0-9_-] kept, every other UTF-8 byte as
    `=XX` (upper-case hex), so '.', '*', '>', ':' and spaces never reach the subject; None -> `_`.
    Readable for plain names, reversible (`session_of`), and a session literally named `_` is `=5F`."""
    if session is None:
        return NO_SESSION
    if session == NO_SESSION:
        return "=5F"
    out = []
    for ch in session:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"={b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def session_of(tok: str) -> str | None:
    """The inverse of `token()`."""
    if tok == NO_SESSION:
        return None
    raw = bytearray()
    i = 0
    while i < len(tok):
        if tok[i] == "=":
            raw.append(int(tok[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(tok[i].encode())
            i += 1
    return raw.decode("utf-8", "surrogatepass")


def stream(fleet: str) -> str:
    return f"LITBRIDGE_{fleet.upper()}"


def bucket(fleet: str) -> str:
    return f"{PREFIX}_{fleet}"


def events_all(fleet: str) -> str:
    """The stream's subject filter: every daemon's events."""
    return f"{PREFIX}.{fleet}.ev.>"


def events_of(fleet: str, daemon: str) -> str:
    """One daemon's events (its publish permission)."""
    return f"{PREFIX}.{fleet}.ev.{daemon}.>"


def event(fleet: str, daemon: str, session: str | None) -> str:
    return f"{PREFIX}.{fleet}.ev.{daemon}.{token(session)}"


def session_events(fleet: str, daemon: str, session: str) -> str:
    return event(fleet, daemon, session)


def command(fleet: str, daemon: str) -> str:
    return f"{PREFIX}.{fleet}.cmd.{daemon}"


def commands_all(fleet: str) -> str:
    return f"{PREFIX}.{fleet}.cmd.*"


def inbox_prefix(daemon: str) -> str:
    """A daemon's own inbox prefix (`_INBOX_D`, not nats-py's shared `_INBOX`): its permissions then let it
    subscribe to `_INBOX_D.>` only, so a daemon cannot read the replies meant for other daemons or clients."""
    return f"_INBOX_{daemon}"


def daemon_key(daemon: str) -> str:
    return f"daemon.{daemon}"


def session_key(daemon: str, session: str) -> str:
    return f"session.{daemon}.{token(session)}"


def sessions_of(daemon: str) -> str:
    """KV key filter for one daemon's sessions."""
    return f"session.{daemon}.>"


def parse_event_subject(subject: str) -> tuple[str, str, str | None]:
    """litbridge.F.ev.D.<token> -> (fleet, daemon, session or None)."""
    parts = subject.split(".")
    if len(parts) != 5 or parts[0] != PREFIX or parts[2] != "ev":
        raise ValueError(f"not a litbridge event subject: {subject!r}")
    return parts[1], parts[3], session_of(parts[4])


def parse_key(key: str) -> tuple[str, str, str | None]:
    """A registry key -> ("daemon", D, None) or ("session", D, session)."""
    parts = key.split(".")
    if len(parts) == 2 and parts[0] == "daemon":
        return "daemon", parts[1], None
    if len(parts) == 3 and parts[0] == "session":
        return "session", parts[1], session_of(parts[2])
    raise ValueError(f"not a litbridge registry key: {key!r}")
