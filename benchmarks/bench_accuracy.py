"""State accuracy: the state timeline litbridge reports for every recording, against the CLI's own record of it.

Every recording in `tests/fixtures/captures/<cli>/` is replayed through the real session and driver on a virtual
clock (`litbridge.replay.replay`, what `litbridge replay --fast` runs) and its `state` events are mapped to three
classes: `idle`, `working` (`thinking` / `responding`) and `question` (`dialog`); `starting`, `dead` and `stopped`
are "other". The truth comes from the record the CLI itself saved during the recording (Claude's transcript,
Codex's rollout, Gemini's chat file, Pi's session file, Kimi Code's wire log, opencode's `event` rows, Qwen Code's
chat file), never from the screen or from litbridge:

- **turn start**: the user's entry (Claude: a `user` entry with typed text, not a tool result, an interrupt marker
  or a local slash command; Codex: `task_started`; Gemini: a `user` entry with text; Copilot: `user.message`; Pi: a
  `user` message; Kimi: `turn.prompt`; opencode: a `user` message; Qwen: a `user` entry with text).
- **turn end**: the final assistant entry (Claude: an `assistant` entry whose `stop_reason` is not `tool_use`, its
  `[Request interrupted` marker or its `turn_duration`; Codex: `task_complete` / `turn_aborted`; Gemini: a `gemini`
  entry whose last version has no tool call, or its `Request cancelled` info entry; Copilot: the `assistant.turn_end`
  of a model call whose `assistant.message` asked for no tool, `abort` or `session.error`; Pi: an assistant message
  whose `stopReason` is not `toolUse`; Kimi: `turn.ended`; opencode: an assistant message completed with an error,
  a finish other than `tool-calls` or a rejected tool; Qwen: an `assistant` entry with no `functionCall`, a
  `cancelled` tool result, or the turn's own API error when nothing follows it). A tool call: Pi's `toolCall` part to its `toolResult`;
  Kimi's approval request (`interaction.request`, before the call is logged) or `tool.call` to its `tool.result`.
- **question**: a tool call is pending (its call entry is in, its result is not) *and* the recorder pressed a key
  that answered it before the result: the record does not say "approval asked", the recording's key log does
  (`keys.jsonl`, labelled by the recorder; typing, pasting, Ctrl+C and interrupt keys are not answers). The question
  lasts from the call entry to the last answering key; a tool call nobody answered (auto mode, a read) is work.

**Time alignment.** Chunks, keys and watched record lines carry `t`, seconds since the CLI was spawned on the
recorder's monotonic clock, and `wall`, the same instant on the wall clock (`t == wall - start wall` to the µs; the
start wall is `meta.json`'s `t0_wall` / `start_wall`). A record entry carries the CLI's own wall-clock `timestamp`
(ms resolution, same machine; Kimi's `time`, epoch ms), taken as `timestamp - start wall`: when the CLI says the thing happened, not when
the recorder saw the line (0.5-300 ms later: the replay appends each line at that later `t`, so a driver cannot read
it earlier). An entry without a timestamp takes its watch `t`. Entries stamped before the recording started (the
history of a resumed session) are not part of it. The replay's `state` events carry `t` on the same axis.

**Scoring window**: from the first turn start to the end of the recorded output (its last chunk). Start-up before the
first turn (and its dialogs) is not scored: the record says nothing about it. A recording whose record holds no
turn (start-up and exit captures) is counted but not scored.

**Per CLI**: % of the window in the right class; detection delay per truth transition (idle→working,
working→question, question→working, working→idle): litbridge's entry into the new class minus the truth's, negative
when the screen showed it before the CLI stamped its record; a transition litbridge never showed while the truth
held is "missed"; **false idle** = litbridge `idle` while the truth is a turn (working or question; must be 0);
**false question** = litbridge `dialog` while the truth is not a question.

Prints a table per CLI and writes `.benchmarks/accuracy-{latest,smoke}.{md,json}`; never fails on a number (the
hard property is asserted by `tests/test_accuracy.py`). Smoke size replays one recording per CLI.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from litbridge.replay import Capture, replay

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
CLIS = ("claude", "codex", "gemini", "copilot", "pi", "kimi", "opencode", "qwen")

IDLE, WORKING, QUESTION = "idle", "working", "question"
State = str | None  # one of the three classes, or None: other (starting, dead, stopped) / nothing yet
CLASS_OF: dict[str, State] = {"idle": IDLE, "thinking": WORKING, "responding": WORKING, "dialog": QUESTION}
TRANSITIONS = ((IDLE, WORKING), (WORKING, QUESTION), (QUESTION, WORKING), (WORKING, IDLE))

Timeline = list[tuple[float, State]]
"""A step function: each (t, state) holds from t until the next step."""

_NOT_AN_ANSWER = re.compile(r"interrupt|ctrl|^(prompt|type|queued|draft|paste|text)\b|submit", re.I)


# ---------------------------------------------------------------------------------------------- the metric


@dataclass
class Score:
    """What one timeline got right against the truth, in seconds (sums over recordings with `add`)."""

    window: float = 0.0
    right: float = 0.0
    delays: dict[tuple[str, str], list[float]] = field(default_factory=lambda: {k: [] for k in TRANSITIONS})
    missed: dict[tuple[str, str], int] = field(default_factory=lambda: dict.fromkeys(TRANSITIONS, 0))
    false_idle: float = 0.0
    false_idle_spans: int = 0
    false_question: float = 0.0
    false_question_spans: int = 0
    turns: int = 0

    def add(self, other: Score) -> None:
        self.window += other.window
        self.right += other.right
        for k in TRANSITIONS:
            self.delays[k] += other.delays[k]
            self.missed[k] += other.missed[k]
        self.false_idle += other.false_idle
        self.false_idle_spans += other.false_idle_spans
        self.false_question += other.false_question
        self.false_question_spans += other.false_question_spans
        self.turns += other.turns


def _at(tl: Timeline, t: float) -> State:
    state: State = None
    for s, v in tl:
        if s > t:
            break
        state = v
    return state


def _run_start(tl: Timeline, t: float, states: set[State]) -> float:
    """Since when `tl` has been, without a break, in one of `states` at `t` (its state at `t` must be one)."""
    since = t
    for s, v in tl:
        if s > t:
            break
        if v in states:
            since = min(since, s)
        else:
            since = t
    return since


def _pieces(
    truth: Timeline, got: Timeline, start: float, end: float
) -> list[tuple[float, float, State, State]]:
    """[a, b) pieces of the window on which both timelines are constant: (a, b, truth, got)."""
    cuts = sorted({start, end, *(t for t, _ in truth + got if start < t < end)})
    return [(a, b, _at(truth, a), _at(got, a)) for a, b in itertools.pairwise(cuts)]


def score(truth: Timeline, got: Timeline, start: float, end: float) -> Score:
    """Score `got` (litbridge's timeline) against `truth` over [start, end)."""
    sc = Score()
    prev_false: dict[str, bool] = {"idle": False, "question": False}
    for a, b, want, have in _pieces(truth, got, start, end):
        if want is None:  # the record is silent here: not scored
            prev_false = {"idle": False, "question": False}
            continue
        sc.window += b - a
        if want == have:
            sc.right += b - a
        # litbridge *went* idle inside a turn; still idle from before the turn began is detection delay, not this
        false_idle = (
            have == IDLE
            and want in (WORKING, QUESTION)
            and _run_start(got, a, {IDLE}) > _run_start(truth, a, {WORKING, QUESTION})
        )
        false_question = have == QUESTION and want != QUESTION
        if false_idle:
            sc.false_idle += b - a
            sc.false_idle_spans += not prev_false["idle"]
        if false_question:
            sc.false_question += b - a
            sc.false_question_spans += not prev_false["question"]
        prev_false = {"idle": false_idle, "question": false_question}
    for i, (t, v) in enumerate(truth):
        if not start <= t < end:
            continue
        before = truth[i - 1][1] if i else None
        sc.turns += v == WORKING and before in (IDLE, None)
        if (before, v) not in sc.delays:
            continue
        since = (
            truth[i - 1][0] if i else float("-inf")
        )  # litbridge's entry must follow the truth's previous change
        # a late entry still counts until the truth enters `v` again (a turn shorter than the delay is seen late,
        # not missed)
        until = next((u for u, w in truth[i + 1 :] if w == v), end)
        d = _detection(got, v, t, since, until)
        if d is None:
            sc.missed[(before, v)] += 1  # type: ignore[index]
        else:
            sc.delays[(before, v)].append(d)  # type: ignore[index]
    return sc


def _detection(got: Timeline, state: State, t: float, since: float, until: float) -> float | None:
    """When litbridge entered `state` for the truth's change at `t`, minus `t`: the entry in effect at `t` (early:
    negative, but not before the truth's previous change at `since`), else its first entry before `until`; None
    when it never showed `state` in between (missed)."""
    entry: float | None = None  # start of litbridge's current run of `state`
    prev: State = None
    for s, v in got:
        if s > t and entry is not None:
            break  # in `state` at t
        if s >= until:
            break
        if v == state and prev != state:
            entry = s
        elif v != state:
            entry = None
        prev = v
    if entry is None:
        return None
    return max(entry, since) - t


def reported(events: Iterable[dict[str, Any]]) -> Timeline:
    """litbridge's timeline: its `state` events' `to`, in the three classes (None for other states)."""
    return [(float(e["t"]), CLASS_OF.get(e["to"])) for e in events if e.get("event") == "state"]


def truth_timeline(
    turns: list[tuple[float, float]],
    questions: list[tuple[float, float]],
    unknown: list[tuple[float, float]] = [],  # noqa: B006 (never mutated)
) -> Timeline:
    """The step function of the intervals: unknown (None) inside an unknown stretch, question inside a question,
    working inside a turn, else idle."""
    cuts = sorted({t for iv in turns + questions + unknown for t in iv})
    tl: Timeline = [(float("-inf"), IDLE)] if cuts else []
    for t in cuts:
        if any(a <= t < b for a, b in unknown):
            v: State = None
        elif any(a <= t < b for a, b in questions):
            v: State = QUESTION
        elif any(a <= t < b for a, b in turns):
            v = WORKING
        else:
            v = IDLE
        if not tl or tl[-1][1] != v:
            tl.append((t, v))
    return tl


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100), None without samples."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))]


# ----------------------------------------------------------------------------------------------- the truth


@dataclass
class Mark:
    """One fact from the CLI's record: `turn_start`, `turn_end`, `tool_start` / `tool_end` (with the call's id)."""

    t: float
    kind: str
    ident: str = ""


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def start_wall(cap: Capture) -> float:
    """The wall-clock instant of the recording's t=0 (see the module docstring)."""
    for key in ("t0_wall", "start_wall"):
        if isinstance(cap.meta.get(key), (int, float)):
            return float(cap.meta[key])
    assert cap.path is not None
    first = orjson.loads((cap.path / "chunks.jsonl").read_bytes().splitlines()[0])
    return float(first["wall"]) - float(first["t"])


def _entries(cap: Capture) -> list[tuple[float, dict[str, Any]]]:
    """The record's entries with their time on the recording's axis (their own timestamp, else the watch's)."""
    t0 = start_wall(cap)
    out = []
    for t_watch, _name, line in cap.transcript:
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(e, dict):
            continue
        stamp = _epoch(e.get("timestamp"))
        t = t_watch if stamp is None else stamp - t0
        if t >= 0:  # a resumed session's history is not part of this recording
            out.append((t, e))
    return out


def _text_parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p]
    return []


def claude_marks(cap: Capture) -> list[Mark]:
    marks = []
    local = ("<command-", "<local-command", "<bash-", "Caveat:", "[Request interrupted")
    for t, e in _entries(cap):
        msg = e.get("message") if isinstance(e.get("message"), dict) else {}
        content = msg.get("content")
        kind = e.get("type")
        if kind == "user":
            parts = content if isinstance(content, list) else []
            for p in parts:
                if isinstance(p, dict) and p.get("type") == "tool_result":
                    marks.append(Mark(t, "tool_end", str(p.get("tool_use_id"))))
            texts = _text_parts(content)
            if any(x.lstrip().startswith("<command-name>/compact<") for x in texts):
                marks.append(
                    Mark(t, "turn_start")
                )  # /compact is a model call: the CLI works until its output
            elif any(x.lstrip().startswith("<local-command-stdout>") for x in texts):
                marks.append(
                    Mark(t, "turn_end")
                )  # a local command's output (ends /compact; nothing otherwise)
            elif any(x.startswith("[Request interrupted") for x in texts):
                marks.append(Mark(t, "turn_end"))
            elif (
                texts
                and not e.get("isMeta")
                and not e.get("isCompactSummary")  # the summary /compact leaves, not a prompt
                and not any(x.lstrip().startswith(local) for x in texts)
            ):
                marks.append(Mark(t, "turn_start"))
        elif kind == "assistant":
            for p in content if isinstance(content, list) else []:
                if isinstance(p, dict) and p.get("type") == "tool_use":
                    marks.append(Mark(t, "tool_start", str(p.get("id"))))
            if msg.get("stop_reason") not in (None, "tool_use"):
                marks.append(Mark(t, "turn_end"))
        elif kind == "system" and e.get("subtype") == "turn_duration":
            marks.append(Mark(t, "turn_end"))
    return marks


def codex_marks(cap: Capture) -> list[Mark]:
    marks = []
    for t, e in _entries(cap):
        p = e.get("payload") if isinstance(e.get("payload"), dict) else {}
        kind = p.get("type")
        if e.get("type") == "event_msg" and kind == "task_started":
            marks.append(Mark(t, "turn_start"))
        elif e.get("type") == "event_msg" and kind in ("task_complete", "turn_aborted"):
            marks.append(Mark(t, "turn_end"))
        elif e.get("type") == "response_item" and kind in (
            "function_call",
            "custom_tool_call",
            "local_shell_call",
        ):
            marks.append(Mark(t, "tool_start", str(p.get("call_id"))))
        elif e.get("type") == "response_item" and str(kind).endswith("_call_output"):
            marks.append(Mark(t, "tool_end", str(p.get("call_id"))))
    return marks


def gemini_marks(cap: Capture) -> list[Mark]:
    entries = _entries(cap)
    last_version: dict[str, dict[str, Any]] = {}
    for _, e in entries:
        if e.get("type") == "gemini" and "id" in e:
            last_version[str(e["id"])] = e
    marks: list[Mark] = []
    reseed = (
        False  # after a cancel Gemini re-writes the history (a `<session_context>` entry, then old entries)
    )
    seen: set[str] = set()
    for t, e in entries:
        if isinstance(e.get("$set"), dict) and "messages" in e["$set"]:
            reseed = False
            continue
        kind = e.get("type")
        if kind == "user":
            texts = _text_parts(e.get("content"))
            if any(x.startswith("<session_context>") for x in texts):
                reseed = True
            if reseed:
                continue
            for p in e.get("content") if isinstance(e.get("content"), list) else []:
                if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
                    marks.append(Mark(t, "tool_end", str(p["functionResponse"].get("id"))))
            if texts:
                marks.append(Mark(t, "turn_start"))
        elif reseed:
            continue
        elif kind == "gemini":
            ident = str(e.get("id"))
            calls = last_version.get(ident, e).get("toolCalls") or []
            if ident in seen:
                continue
            seen.add(ident)
            for c in calls:
                if isinstance(c, dict):
                    marks.append(Mark(t, "tool_start", str(c.get("id"))))
            if not calls:
                marks.append(Mark(t, "turn_end"))
        elif kind == "error" or (kind == "info" and "cancelled" in str(e.get("content", "")).lower()):
            marks.append(Mark(t, "turn_end"))
    return marks


def copilot_marks(cap: Capture) -> list[Mark]:
    marks = []
    answered = False  # the current model call wrote a message asking for no tool
    for t, e in _entries(cap):
        kind = e.get("type")
        data = e.get("data") if isinstance(e.get("data"), dict) else {}
        if kind == "user.message":
            marks.append(Mark(t, "turn_start"))
        elif kind == "assistant.turn_start":
            answered = False
        elif kind == "assistant.message":
            calls = [c for c in data.get("toolRequests") or [] if isinstance(c, dict)]
            for c in calls:
                marks.append(Mark(t, "tool_start", str(c.get("toolCallId"))))
            answered = not calls
        elif kind == "tool.execution_complete":
            marks.append(Mark(t, "tool_end", str(data.get("toolCallId"))))
        elif (kind == "assistant.turn_end" and answered) or kind in ("abort", "session.error"):
            marks.append(Mark(t, "turn_end"))
    return marks


def pi_marks(cap: Capture) -> list[Mark]:
    """Pi's session JSONL: a `user` message starts a turn, an assistant message whose `stopReason` is not `toolUse`
    ends it (`stop`, `length`, `aborted`, `error`); its `toolCall` parts and the `toolResult` messages are tools."""
    marks = []
    for t, e in _entries(cap):
        msg = e.get("message") if isinstance(e.get("message"), dict) else {}
        if e.get("type") != "message":
            continue
        role = msg.get("role")
        if role == "user":
            marks.append(Mark(t, "turn_start"))
        elif role == "toolResult":
            marks.append(Mark(t, "tool_end", str(msg.get("toolCallId"))))
        elif role == "assistant":
            for p in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if isinstance(p, dict) and p.get("type") == "toolCall":
                    marks.append(Mark(t, "tool_start", str(p.get("id"))))
            if msg.get("stopReason") != "toolUse":
                marks.append(Mark(t, "turn_end"))
    return marks


def kimi_marks(cap: Capture) -> list[Mark]:
    """Kimi Code's wire log, on its own `time` (epoch ms): `turn.prompt` starts a turn, `turn.ended` ends it; an
    approval (`interaction.request`, named by its `toolCallId`) opens a tool until its `tool.result` (the call
    itself is logged only once approved)."""
    t0 = start_wall(cap)
    marks = []
    for t_watch, _name, line in cap.transcript:
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(e, dict):
            continue
        t = e["time"] / 1000 - t0 if isinstance(e.get("time"), (int, float)) else t_watch
        kind = e.get("type")
        event = e.get("event") if isinstance(e.get("event"), dict) else {}
        if kind == "turn.prompt":
            marks.append(Mark(t, "turn_start"))
        elif kind == "turn.ended":
            marks.append(Mark(t, "turn_end"))
        elif kind == "interaction.request" and e.get("toolCallId"):
            marks.append(Mark(t, "tool_start", str(e["toolCallId"])))
        elif kind == "context.append_loop_event" and event.get("type") == "tool.call":
            marks.append(Mark(t, "tool_start", str(event.get("toolCallId") or event.get("id"))))
        elif kind == "context.append_loop_event" and event.get("type") == "tool.result":
            marks.append(Mark(t, "tool_end", str(event.get("toolCallId"))))
    return marks


def opencode_marks(cap: Capture) -> list[Mark]:
    """opencode's `event` table (the rows `sqlite_watch.jsonl` recorded), on the objects' own epoch-ms stamps (a
    row's watch `t` when it has none): a `user` message starts a turn (`time.created`); an assistant message ends it
    when it completes (`time.completed`) with an error (an interrupt, an API error), a finish other than
    `tool-calls`, or a rejected tool call; a `tool` part opens a tool (`state.time.start`) until its state is
    `completed` / `error` (`state.time.end`)."""
    t0 = start_wall(cap)
    marks: list[Mark] = []
    seen: set[tuple[str, str]] = set()
    rejected: set[str] = set()  # assistant messages with a rejected tool call

    def at(stamp: Any, fallback: float) -> float:
        return stamp / 1000 - t0 if isinstance(stamp, (int, float)) else fallback

    for r in cap.sqlite:
        if r.table != "event":
            continue
        try:
            data = orjson.loads(str(r.row.get("data") or ""))
        except orjson.JSONDecodeError:
            continue
        kind = str(r.row.get("type") or "")
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        part = data.get("part") if isinstance(data.get("part"), dict) else {}
        if kind.startswith("message.updated") and info.get("id"):
            mid, times = str(info["id"]), info.get("time") or {}
            if info.get("role") == "user" and ("start", mid) not in seen:
                seen.add(("start", mid))
                marks.append(Mark(at(times.get("created"), r.t), "turn_start"))
            elif info.get("role") == "assistant" and times.get("completed") and ("end", mid) not in seen:
                seen.add(("end", mid))
                if info.get("error") or info.get("finish") != "tool-calls" or mid in rejected:
                    marks.append(Mark(at(times.get("completed"), r.t), "turn_end"))
        elif kind.startswith("message.part.updated") and part.get("type") == "tool":
            call = str(part.get("callID") or part.get("id"))
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            times = state.get("time") or {}
            if ("tool", call) not in seen:
                seen.add(("tool", call))
                marks.append(Mark(at(times.get("start"), r.t), "tool_start", call))
            if state.get("status") in ("completed", "error") and ("done", call) not in seen:
                seen.add(("done", call))
                marks.append(Mark(at(times.get("end"), r.t), "tool_end", call))
                if "rejected" in str(state.get("error") or ""):
                    rejected.add(str(part.get("messageID")))
    return marks


def qwen_marks(cap: Capture) -> list[Mark]:
    """Qwen Code's chat JSONL: a `user` entry with text starts a turn; an `assistant` entry with no `functionCall`
    part ends it (a cancel leaves the partial answer as one), and so does a `tool_result` whose status is
    `cancelled` (a denied call: the CLI stops there); `functionCall` parts to their `tool_result` are tools. An
    `api_error` telemetry entry of the turn's own prompt (not a background one: `#managed-…`) ends it when it is the
    turn's last word (5xx are retried, logging one per try, until an answer follows)."""
    marks: list[Mark] = []
    failed: float | None = None  # the open turn's last entry is an API error of its own at this time

    def settle() -> None:
        nonlocal failed
        if failed is not None:
            marks.append(Mark(failed, "turn_end"))
            failed = None

    for t, e in _entries(cap):
        kind = e.get("type")
        msg = e.get("message") if isinstance(e.get("message"), dict) else {}
        parts = [p for p in msg.get("parts") or [] if isinstance(p, dict)]
        if kind == "user" and any(isinstance(p.get("text"), str) for p in parts):
            settle()
            marks.append(Mark(t, "turn_start"))
        elif kind == "assistant":
            failed = None
            calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
            for c in calls:
                marks.append(Mark(t, "tool_start", str(c.get("id"))))
            if not calls:
                marks.append(Mark(t, "turn_end"))
        elif kind == "tool_result":
            failed = None
            for p in parts:
                if isinstance(p.get("functionResponse"), dict):
                    marks.append(Mark(t, "tool_end", str(p["functionResponse"].get("id"))))
            result = e.get("toolCallResult") if isinstance(e.get("toolCallResult"), dict) else {}
            if result.get("status") == "cancelled":
                marks.append(Mark(t, "turn_end"))
        elif kind == "system" and e.get("subtype") == "ui_telemetry":
            payload = e.get("systemPayload") if isinstance(e.get("systemPayload"), dict) else {}
            ui = payload.get("uiEvent") if isinstance(payload.get("uiEvent"), dict) else {}
            if "#managed-" in str(ui.get("prompt_id", "")):
                continue
            if ui.get("event.name") == "qwen-code.api_error":
                failed = t
            elif ui.get("event.name") == "qwen-code.api_response":
                failed = None
    settle()
    return marks


MARKS = {
    "claude": claude_marks,
    "codex": codex_marks,
    "gemini": gemini_marks,
    "copilot": copilot_marks,
    "pi": pi_marks,
    "kimi": kimi_marks,
    "opencode": opencode_marks,
    "qwen": qwen_marks,
}


def answer_keys(cap: Capture) -> list[float]:
    """Times of the recorder's keystrokes that can answer a question (see the module docstring)."""
    if cap.path is None or not (cap.path / "keys.jsonl").exists():
        return []
    out = []
    for raw in (cap.path / "keys.jsonl").read_bytes().splitlines():
        if raw.strip():
            k = orjson.loads(raw)
            label = str(k.get("label", ""))
            if not label.startswith("auto-reply") and not _NOT_AN_ANSWER.search(label):
                out.append(float(k["t"]))
    return out


@dataclass
class Truth:
    """The record's turns and questions, and the stretches it is silent about (not scored)."""

    turns: list[tuple[float, float]] = field(default_factory=list)
    questions: list[tuple[float, float]] = field(default_factory=list)
    unknown: list[tuple[float, float]] = field(default_factory=list)

    def timeline(self) -> Timeline:
        return truth_timeline(self.turns, self.questions, self.unknown)


def intervals(marks: list[Mark], keys: list[float], end: float) -> Truth:
    """Turn and question intervals from the record's marks and the answering keys. A turn the record never ends
    before the next user entry (Claude writes nothing for an interrupt before the first token) ends at its last
    entry, and the time from there to the next turn is unknown."""
    truth = Truth()
    begun: float | None = None
    last = 0.0  # the open turn's latest entry
    pending: dict[str, float] = {}

    def close(t0: float, t1: float) -> None:
        answers = [k for k in keys if t0 < k <= t1]
        if answers:
            truth.questions.append((t0, answers[-1]))

    def finish(t: float) -> None:
        nonlocal begun
        assert begun is not None
        for t0 in pending.values():
            close(t0, t)
        pending.clear()
        if t > begun:
            truth.turns.append((begun, t))
        begun = None

    for m in sorted(marks, key=lambda m: m.t):
        if m.kind == "turn_start":
            if begun is not None:  # the record is silent about how the open turn ended
                finish(last)
                truth.unknown.append((last, m.t))
            begun = last = m.t
            continue
        if begun is None:
            continue
        last = m.t
        if m.kind == "tool_start":
            pending.setdefault(m.ident, m.t)
        elif m.kind == "tool_end" and m.ident in pending:
            close(pending.pop(m.ident), m.t)
        elif m.kind == "turn_end":
            finish(m.t)
    if begun is not None:
        finish(end)
    return truth


# ---------------------------------------------------------------------------------------------- one replay


@dataclass
class Result:
    cli: str
    name: str
    score: Score | None  # None: the record holds no turn
    truth: Timeline
    got: Timeline


def recordings(cli: str) -> list[Path]:
    folder = CAPTURES / cli
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "chunks.jsonl").exists())


def truth_of(cap: Capture, cli: str) -> tuple[Truth, float]:
    """The truth from the recording's own record, and the end of its output (the scoring window's end)."""
    end = round(max(t for t, _ in cap.chunks), 3)  # the replay stamps its events to the ms
    return intervals(MARKS[cli](cap), answer_keys(cap), end), end


def measure(path: Path, cli: str) -> Result:
    """Replay one recording on the virtual clock and score its state timeline against its record."""
    cap = Capture.load(path)
    found, end = truth_of(cap, cli)
    truth = found.timeline()
    got = reported(replay(cap, fast=True))
    if not found.turns:
        return Result(cli, cap.name, None, truth, got)
    return Result(cli, cap.name, score(truth, got, found.turns[0][0], end), truth, got)


# ---------------------------------------------------------------------------------------------- the bench

RESULTS: list[Result] = []


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:,.0f}"


def table(results: list[Result]) -> str | None:
    if not results:
        return None
    head = ["CLI", "recordings (scored)", "turns", "right state"]
    head += [f"{a}→{b} p50 / p99 ms (n, missed)" for a, b in TRANSITIONS]
    head += ["false idle in a turn", "false question"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cli in CLIS:
        mine = [r for r in results if r.cli == cli]
        if not mine:
            continue
        tot = Score()
        for r in mine:
            if r.score is not None:
                tot.add(r.score)
        scored = sum(r.score is not None for r in mine)
        row = [
            cli,
            f"{len(mine)} ({scored})",
            str(tot.turns),
            f"{100 * tot.right / tot.window:.1f} %" if tot.window else "-",
        ]
        for k in TRANSITIONS:
            d = tot.delays[k]
            row.append(f"{_ms(pct(d, 50))} / {_ms(pct(d, 99))} ({len(d)}, {tot.missed[k]})")
        row.append(f"{tot.false_idle:.3f} s ({tot.false_idle_spans})")
        row.append(f"{tot.false_question:.3f} s ({tot.false_question_spans})")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def rows(results: list[Result]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        row: dict[str, Any] = {"cli": r.cli, "recording": r.name, "scored": r.score is not None}
        if r.score is not None:
            s = r.score
            row.update(
                window_s=s.window,
                right_s=s.right,
                turns=s.turns,
                false_idle_s=s.false_idle,
                false_idle_spans=s.false_idle_spans,
                false_question_s=s.false_question,
                false_question_spans=s.false_question_spans,
                delays_s={f"{a}->{b}": s.delays[(a, b)] for a, b in TRANSITIONS},
                missed={f"{a}->{b}": s.missed[(a, b)] for a, b in TRANSITIONS},
            )
        out.append(row)
    return out


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    from report import report_at_end  # type: ignore[import-not-found]

    report_at_end(
        request,
        "accuracy",
        "litbridge state accuracy against the CLIs' own records (same run)",
        lambda: table(RESULTS),
        lambda: rows(RESULTS),
    )


@pytest.mark.parametrize("cli", CLIS)
def test_state_accuracy(benchmark: Any, cli: str) -> None:
    from report import SMOKE  # type: ignore[import-not-found]

    paths = recordings(cli)
    if SMOKE:  # one recording whose record holds a turn
        paths = [next(p for p in paths if truth_of(Capture.load(p), cli)[0].turns)]
    done: list[Result] = []

    def run() -> None:
        done[:] = [measure(p, cli) for p in paths]

    benchmark.pedantic(run, rounds=1, iterations=1)
    RESULTS.extend(done)
    assert len(done) == len(paths)
