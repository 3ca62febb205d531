"""Claude Code's JSONL transcript: where it lives, tailing it in whole lines, and what its entries mean for a turn.

Owns the one copy of the project-slug rule, the pinned-file tailer (`--session-id`, `/clear` roll, resume) and
the turn tracker (text parts, tool_use/tool_result, usage once per message id, end_turn + turn_duration,
API errors, interrupts). It knows nothing about screens or PTYs.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from litbridge.drivers.records import JsonlFile, UsageTally, tokens

TOOL_RESULT_LIMIT = 5000
INTERRUPT_PREFIX = "[Request interrupted by user"
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _java_hash(s: str) -> int:
    """32-bit `h = (h << 5) - h + code | 0` over UTF-16 code units (JS string hash)."""
    h = 0
    data = s.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = ((h << 5) - h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _base36(n: int) -> str:
    if n == 0:
        return "0"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = _B36[r] + out
    return out


_NOT_ALNUM_RE = re.compile(r"[^A-Za-z0-9]")


def project_slug(cwd: str) -> str:
    """`cwd` with every non-[A-Za-z0-9] UTF-16 code unit -> "-"; >200 chars -> first 200 + "-" + base36 hash."""
    if cwd.isascii():  # one code unit per character (every create asks: a substitution, not a loop)
        slug = _NOT_ALNUM_RE.sub("-", cwd)
    else:
        units = cwd.encode("utf-16-le", "surrogatepass")
        out = []
        for i in range(0, len(units), 2):
            code = units[i] | units[i + 1] << 8
            ch = chr(code) if code < 0xD800 or code > 0xDFFF else "-"
            out.append(ch if ch.isascii() and ch.isalnum() else "-")
        slug = "".join(out)
    if len(slug) > 200:
        slug = slug[:200] + "-" + _base36(abs(_java_hash(cwd)))
    return slug


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude's config dir: the create env's CLAUDE_CONFIG_DIR, the daemon's, else `$HOME/.claude`."""
    env = env or {}
    explicit = env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    home = env.get("HOME") or os.environ.get("HOME") or str(Path.home())
    return Path(home) / ".claude"


def global_config_path(env: Mapping[str, str] | None = None) -> Path:
    """`~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`)."""
    env = env or {}
    explicit = env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser() / ".claude.json"
    home = env.get("HOME") or os.environ.get("HOME") or str(Path.home())
    return Path(home) / ".claude.json"


def project_dir(cwd: str, env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "projects" / project_slug(cwd)


# ---------------------------------------------------------------------------------------------- tailer


# Sessions in one project folder each look at the folder and at the heads of the files new in it (a `/clear`
# roll is a new file): what they learn is the same for all of them, so it is learnt once per folder change and
# once per file growth, not once per session (a burst of N sessions in one folder was N² listings and reads).
_LISTINGS: dict[str, tuple[int, frozenset[str]]] = {}
# path -> (inode, bytes read, final, what the head says, loop time of the last look or None)
_HEADS: dict[str, tuple[int, int, bool, tuple[tuple[str, str | None], ...], float | None]] = {}
_RACY_NS = 50_000_000  # a folder changed this recently may change again within its mtime's granularity
HEAD_FRESH = 0.25  # s: an undecided head one session looked at is taken as is by the others for this long
_CACHE_MAX = 4096


def folder_names(directory: Path) -> frozenset[str]:
    """The `.jsonl` names in `directory`, listed again only when its mtime moved (a listing taken while the
    folder was still changing is not kept: a file created in the same clock tick would not move the mtime)."""
    key = str(directory)
    try:
        mtime = os.stat(key).st_mtime_ns
    except OSError:
        return frozenset()
    cached = _LISTINGS.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        with os.scandir(key) as it:
            names = frozenset(e.name for e in it if e.name.endswith(".jsonl"))
    except OSError:
        return frozenset()
    if time.time_ns() - mtime > _RACY_NS:
        if len(_LISTINGS) >= _CACHE_MAX:
            _LISTINGS.clear()
        _LISTINGS[key] = (mtime, names)
    return names


def head_entries(path: str, now: float | None = None) -> tuple[tuple[str, str | None], ...]:
    """What the head of a transcript (its first 12 lines, 16 KB at most) says, in order, up to its first typed
    prompt: ("clear", cwd) for a `/clear` command, ("prompt", None) for a typed prompt. Never read again once the
    head is complete or holds a prompt (the file is append-only, its name a fresh uuid); else read again when it
    grew. `now` (the asker's loop time): a look another session took less than HEAD_FRESH seconds before is
    taken as is, with no stat (a follower asks every 0.5 s, so its own looks are never taken over)."""
    key = path
    cached = _HEADS.get(key)
    if cached is not None and (
        cached[2] or (now is not None and cached[4] is not None and 0 <= now - cached[4] < HEAD_FRESH)
    ):
        return cached[3]
    try:
        st = os.stat(key)
    except OSError:
        return ()
    if cached is not None and cached[0] == st.st_ino and cached[1] == st.st_size:
        _HEADS[key] = (*cached[:4], now)
        return cached[3]
    try:
        with open(key, "rb") as fh:
            head = fh.read(16384)
    except OSError:
        return ()
    lines = head.split(b"\n")
    final = len(head) == 16384 or len(lines) > 12
    found: list[tuple[str, str | None]] = []
    for raw in lines[:12]:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or obj.get("type") != "user":
            continue
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, str) and content.startswith("<command-name>/clear</command-name>"):
            found.append(("clear", obj.get("cwd")))
        if prompt_text(obj) is not None:
            found.append(("prompt", None))
            final = True
            break
    if len(_HEADS) >= _CACHE_MAX:
        _HEADS.clear()
    verdict = tuple(found)
    _HEADS[key] = (st.st_ino, len(head), final, verdict, now)
    return verdict


class TranscriptTailer(JsonlFile):
    """Reads the pinned `<session-id>.jsonl` in whole lines (`records.JsonlFile`); follows `/clear` rolls.

    Never switches to a sibling because it is newer: the only switch is to a file created after the pin
    whose first prompt entry is `/clear` (Claude's own roll), or an explicit `pin()`.

    `skip`: the entries `TurnTracker` never reads (it reads `user`, `assistant` and `system` only), known by
    their first bytes: the bookkeeping entries Claude Code writes with `type` as their first key, and the
    `attachment` entries (the system prompt, the skill and tool listings: most of a record's bytes), whose third
    key is `attachment`. A quote inside a JSON string is escaped, so these bytes can only be the keys.
    """

    skip = re.compile(
        rb'\{"type":"(?:api-request-shape|api-request-blob|api-request|file-history-snapshot|mode|permission-mode'
        rb'|atis-latch|last-prompt|cost-state)"'
        rb'|\{"parentUuid":(?:null|"[^"\\]*"),"isSidechain":(?:true|false),"attachment":\{'
    )

    def __init__(self, directory: Path, session_id: str | None, *, from_start: bool = False) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.session_id: str | None = None
        self.ruled_out: set[str] = set()  # files created since the pin that are not a roll of ours
        if session_id:
            self.pin(session_id, from_start=from_start)
        else:
            self._snapshot = self._list()

    def _list(self) -> frozenset[str]:
        """The transcripts' names in the folder (`folder_names`: shared by every session in it)."""
        return folder_names(self.directory)

    def pin(self, session_id: str, *, from_start: bool = True) -> None:  # type: ignore[override]
        """Follow another file of this session (resume discovery, `/clear`)."""
        self.session_id = session_id
        self._snapshot = self._list()
        super().pin(self.directory / f"{session_id}.jsonl", from_start=from_start)

    def find_clear_roll(self, cwd: str | None = None, now: float | None = None) -> str | None:
        """Session id of a file created since the pin that starts with a `/clear` command (Claude's roll). A file
        that starts with a typed prompt is another conversation and is not read again (`ruled_out`): sessions
        sharing a project folder each start a file there. `now`: the follower's loop time (`head_entries`)."""
        folder = os.path.join(self.directory, "")
        for name in sorted(self._list() - self._snapshot - self.ruled_out):
            for kind, where in head_entries(folder + name, now):
                if kind == "clear" and (cwd is None or where in (None, cwd)):
                    return name[: -len(".jsonl")]
                if kind == "prompt":
                    self.ruled_out.add(name)  # a typed prompt before any `/clear`: another conversation
                    break
        return None

    def newest_since(self, since: float) -> str | None:
        """Session id of the newest conversation file modified after `since` (for `--continue`)."""
        best: tuple[float, str] | None = None
        for p in self.directory.glob("*.jsonl"):
            try:
                m = p.stat().st_mtime
            except OSError:
                continue
            if m >= since and (best is None or m > best[0]):
                best = (m, p.stem)
        return best[1] if best else None


# ---------------------------------------------------------------------------------------------- turns


@dataclass
class TurnEvent:
    """What an entry means: kind = prompt, text, reasoning, tool_use, tool_result, complete, interrupted, error,
    abandoned."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def flatten_tool_content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, dict):
                parts.append(orjson.dumps(item).decode())
        text = "\n".join(parts)
    else:
        text = orjson.dumps(content).decode()
    if len(text) > TOOL_RESULT_LIMIT:
        text = text[:TOOL_RESULT_LIMIT] + "…"
    return text


_LOCAL_CMD_RE = re.compile(r"^\s*<(command-name|local-command-|command-message|bash-)")


def prompt_text(entry: Mapping[str, Any]) -> str | None:
    """The typed prompt of a `user` entry, or None for meta/tool-result/command/interrupt entries."""
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    if entry.get("isSidechain"):
        return None
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if not texts or any(b.get("type") == "tool_result" for b in content if isinstance(b, dict)):
            return None
        text = "\n".join(texts)
    else:
        return None
    if text.startswith(INTERRUPT_PREFIX) or _LOCAL_CMD_RE.match(text):
        return None
    return text


class TurnTracker:
    """Turns a stream of transcript entries into turn events; one terminal event per prompt."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.open = False
        self.parts: list[str] = []
        self.tool_ids: set[str] = set()
        self.tally = UsageTally()  # per message id: a message written again as it grows replaces its own
        self.pending_complete = False
        self.prompt: str | None = None

    @property
    def content(self) -> str:
        return "\n\n".join(self.parts)

    @property
    def usage(self) -> dict[str, int] | None:
        return self.tally.total

    def _finish(self, kind: str, text: str = "", **data: Any) -> TurnEvent:
        ev = TurnEvent(kind, text, data)
        self.open = False
        self.pending_complete = False
        return ev

    def feed(self, entries: Iterable[Mapping[str, Any]]) -> list[TurnEvent]:
        out: list[TurnEvent] = []
        for e in entries:
            out.extend(self._feed_one(e))
        return out

    def _feed_one(self, e: Mapping[str, Any]) -> list[TurnEvent]:
        out: list[TurnEvent] = []
        typ = e.get("type")
        if e.get("isSidechain"):
            return out
        if typ == "user":
            text = prompt_text(e)
            content = (e.get("message") or {}).get("content")
            if text is not None:
                if self.pending_complete:
                    out.append(self._finish("complete", self.content, usage=self.usage))
                elif self.open:
                    # Esc before the first token leaves nothing after the prompt: the turn was abandoned.
                    out.append(self._finish("abandoned", self.content))
                self.reset()
                self.open = True
                self.prompt = text
                out.append(
                    TurnEvent("prompt", text, {"uuid": e.get("uuid"), "session_id": e.get("sessionId")})
                )
                return out
            if isinstance(content, list):
                for b in content:
                    if not isinstance(b, dict):
                        continue
                    if b.get("type") == "tool_result":
                        tid = str(b.get("tool_use_id", ""))
                        out.append(
                            TurnEvent(
                                "tool_result",
                                flatten_tool_content(b.get("content")),
                                {"tool_use_id": tid, "is_error": bool(b.get("is_error"))},
                            )
                        )
                    elif b.get("type") == "text" and str(b.get("text", "")).startswith(INTERRUPT_PREFIX):
                        if self.open:
                            out.append(self._finish("interrupted", self.content))
            elif isinstance(content, str) and content.startswith(INTERRUPT_PREFIX) and self.open:
                out.append(self._finish("interrupted", self.content))
            return out
        if typ == "assistant":
            msg = e.get("message") or {}
            if e.get("isApiErrorMessage"):
                texts = [b.get("text", "") for b in msg.get("content") or [] if isinstance(b, dict)]
                message = "\n".join(t for t in texts if t) or str(e.get("error") or "API error")
                if self.open:
                    out.append(self._finish("error", message, error=e.get("error")))
                return out
            mid = msg.get("id")
            usage = msg.get("usage") or {}
            if mid and usage:
                self.tally.put(
                    mid,
                    tokens(
                        usage.get("input_tokens"),
                        usage.get("output_tokens"),
                        usage.get("cache_read_input_tokens"),
                        usage.get("cache_creation_input_tokens"),
                    ),
                )
            for b in msg.get("content") or []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text":
                    t = str(b.get("text", ""))
                    if t.strip():
                        self.parts.append(t)
                        out.append(TurnEvent("text", self.content))
                elif b.get("type") == "thinking":
                    t = str(b.get("thinking") or "")
                    if t.strip():  # a redacted block has only its signature
                        out.append(TurnEvent("reasoning", t))
                elif b.get("type") == "tool_use":
                    tid = str(b.get("id", ""))
                    if tid not in self.tool_ids:
                        self.tool_ids.add(tid)
                        out.append(
                            TurnEvent(
                                "tool_use",
                                str(b.get("name", "")),
                                {"tool_use_id": tid, "input": b.get("input")},
                            )
                        )
            if msg.get("stop_reason") == "end_turn" and self.open:
                self.pending_complete = True
            return out
        if typ == "system" and e.get("subtype") == "turn_duration" and self.open:
            out.append(self._finish("complete", self.content, usage=self.usage))
        return out


MODEL_ID_RE = re.compile(r"^claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?$")


def last_model(path: Path | None, limit: int = 512 * 1024) -> str | None:
    """The model of the last assistant message in a transcript (its last `limit` bytes), as the logo names it
    (`claude-opus-5-5` -> `Opus 5.5`; an id of another shape as is). For a resumed conversation whose history
    fills the screen, so the logo that names the model has scrolled away before startup ends."""
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - limit))
            data = fh.read()
    except OSError:
        return None
    for line in reversed(data.split(b"\n")):
        if b'"assistant"' not in line or b'"model"' not in line:
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        msg = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
        model = msg.get("model") if isinstance(msg, dict) else None
        if isinstance(model, str) and model and not model.startswith("<"):  # `<synthetic>`: Claude's own note
            m = MODEL_ID_RE.match(model)
            if m is None:
                return model
            family, major, minor = m.groups()
            return f"{family.capitalize()} {major}" + (f".{minor}" if minor else "")
    return None
