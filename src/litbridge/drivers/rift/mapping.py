"""The `rift --serve` event mapping: one rift event in, litbridge host calls out (state, replace, tools, questions,
exactly one terminal call per turn) plus the metadata shown in list/dump.

Pure and synchronous: no process, no sockets, no event loop (a scheduler callable is injected for coalescing).
Rendering the transcript text is `render.py`'s job; spawning rift is `driver.py`'s.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from litbridge.drivers.rift import render

# Rift's protocol strings the mapping keys on (rift 2.9.0, protocol v1).
CANCELLED_WARNING = "turn cancelled"
ERROR_PREFIX = "error: "
BASH_APPROVAL_PREFIXES = ("Allow bash", "Allow write", "Allow edit")
TRUST_MARK = "Trust this manifest"
REVIEW_OPTIONS = ("apply", "reject")
EDIT_TOOLS = ("write", "edit")  # their successful tool_result is followed by an edit_diff


class MappingHost(Protocol):
    """The subset of DriverHost the mapping calls (see litbridge.drivers.base.DriverHost)."""

    def set_state(self, state: str) -> None: ...
    def turn_text(self, text: str) -> None: ...
    def turn_thinking(self, text: str) -> None: ...
    def tool_use(self, tool_use_id: str, name: str, input: Any) -> None: ...
    def tool_result(self, tool_use_id: str, content: str, is_error: bool) -> None: ...
    def turn_complete(self, content: str, usage: dict | None, source: str) -> None: ...
    def turn_interrupted(self, content: str) -> None: ...
    def turn_error(self, message: str, kind: str) -> None: ...
    def open_question(self, kind: str, text: str, options: list[dict], detail: Any, source: str) -> str: ...
    def close_question(self, question_id: str, reason: str) -> None: ...
    def input_ready(self) -> None: ...


@dataclass
class OpenQuestion:
    """A rift ask or edit_review relayed as a litbridge question."""

    rift_id: int
    kind: str  # "ask" | "review"
    choices: list[str]
    turn_bound: bool
    proposal: str = ""


@dataclass
class Turn:
    """What the mapping accumulates for the turn in flight."""

    number: int
    tracked: bool = True  # False: started by `input` (no litbridge turn; rendered and gated, not reported)
    segments: list[str] = field(default_factory=list)
    thinking: str = ""
    tools: int = 0
    open_tools: deque[str] = field(default_factory=deque)
    cancel_sent: bool = False
    cancelled: bool = False
    error: str | None = None

    def text(self, final: bool = False) -> str:
        """The whole turn's text: segments (one per iteration with text) joined by a blank line; the final
        text is trimmed, the live one keeps trailing whitespace deltas."""
        parts = [s.strip() if final else s.strip("\n") for s in self.segments if s.strip()]
        return "\n\n".join(parts)


class AnswerError(ValueError):
    """An answer that cannot be mapped onto the question (bad digit/option); carries a protocol error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def parse_args(raw: Any) -> Any:
    """rift sends `tool_start.args` as a JSON-encoded string; decode it, keep the raw string if it is not JSON."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def usage_from_stats(stats: dict) -> dict[str, Any]:
    """rift `done.stats` -> litbridge usage (cache_read = prompt tokens rift did not have to bill/prefill)."""

    def num(key: str) -> int:
        v = stats.get(key, 0)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0

    prompt, billed = num("prompt_tokens"), num("billed_prompt_tokens")
    usage: dict[str, Any] = {
        "input_tokens": prompt,
        "output_tokens": num("output_tokens"),
        "cache_read_tokens": max(prompt - billed, 0),
        "cache_creation_tokens": 0,
        "iterations": num("iterations"),
        "duration_ms": num("duration_ms"),
    }
    tps = stats.get("tokens_per_sec")
    if isinstance(tps, (int, float)) and not isinstance(tps, bool):
        usage["tokens_per_sec"] = tps
    return usage


THINKING_TAIL = 200


def thinking_line(reasoning: str) -> str:
    """`thinking{text}` is a progress line, not a transcript: the tail of the reasoning on one line (sending the
    whole buffer on every flush would be O(n^2) bytes)."""
    flat = " ".join(reasoning.split())
    return flat if len(flat) <= THINKING_TAIL else "…" + flat[-(THINKING_TAIL - 1) :]


def ask_kind(question: str, choices: list[str]) -> str:
    """Heuristic question kind (rift's ask kinds are not part of its contract)."""
    if TRUST_MARK in question:
        return "trust"
    if question.startswith(BASH_APPROVAL_PREFIXES):
        return "permission"
    return "choice" if choices else "text"


def options_for(labels: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"digit": str(i + 1), "label": label, "selected": i == 0} for i, label in enumerate(labels)]


class RiftMapping:
    """Feeds rift events to a host. `send(cmd)` writes one command to rift; `feed(bytes)` renders transcript text.

    `schedule(delay, fn)` defers a coalesced flush (loop.call_later); with coalesce=0 every delta flushes at once.
    """

    def __init__(
        self,
        host: MappingHost,
        send: Callable[[dict], None],
        feed: Callable[[bytes], None],
        schedule: Callable[[float, Callable[[], None]], Any] | None = None,
        coalesce: float = 0.05,
        edit_review: bool = False,
    ) -> None:
        self.host, self.send, self.feed = host, send, feed
        self.schedule, self.coalesce = schedule, coalesce
        self.edit_review = edit_review
        self.generation = secrets.token_hex(3)  # namespaces synthesized ids per rift process
        self.state = "starting"
        self.turn: Turn | None = None
        self.turns = 0
        self.questions: dict[str, OpenQuestion] = {}
        self.by_rift_id: dict[int, str] = {}
        self.ready: dict[str, Any] | None = None
        self.meta: dict[str, Any] = {}
        self.notices: deque[str] = deque(maxlen=20)
        self.saving = False  # between `done` and the `context` that follows rift's session save
        self.listeners: list[Callable[[dict], None]] = []  # see every event after it is mapped (driver waits)
        self._flush_pending = False
        self._thinking_open = False
        self._pending_result: tuple[str, str] | None = None
        self._sent_text = ""
        self._sent_thinking = ""

    # ---------- host-facing state ----------
    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.host.set_state(state)

    @property
    def busy(self) -> bool:
        return self.turn is not None

    def can_accept_input(self) -> bool:
        return self.state == "idle" and self.turn is None and not self.questions

    # ---------- commands out ----------
    def begin_turn(self, text: str, tracked: bool = True, echo: bool = True) -> None:
        """Send a prompt as a new turn (the caller already rejected empty text and busy sessions)."""
        self.turns += 1
        self.turn = Turn(self.turns, tracked)
        self._sent_text = self._sent_thinking = ""
        self.send({"cmd": "prompt", "text": text})
        if echo:
            self.feed(render.user(text))
        self._set_state("thinking")

    def cancel(self) -> bool:
        """`interrupt` -> rift `cancel`; False when there is no turn to cancel (rift would ignore it)."""
        if self.turn is None:
            return False
        if not self.turn.cancel_sent:
            self.turn.cancel_sent = True
            self.send({"cmd": "cancel"})
        return True

    def answer(
        self,
        question_id: str,
        digit: str | int | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> str:
        """Map a litbridge answer onto rift `answer`/`edit_decision`; returns the label sent."""
        q = self.questions.get(question_id)
        if q is None:
            raise AnswerError("no_question", f"no open question {question_id!r}")
        labels = self.labels(q)
        label = self._choose(labels, digit, option, text)
        if q.kind == "review":
            self.send({"cmd": "edit_decision", "id": q.rift_id, "apply": label == "apply"})
        else:
            self.send({"cmd": "answer", "id": q.rift_id, "text": label})
        self.feed(render.answered(label))
        self._close(question_id, "answered")
        return label

    @staticmethod
    def labels(q: Any) -> list[str]:
        """The option labels of a question, in digit order ([] for a free-text ask)."""
        return list(REVIEW_OPTIONS) if q.kind == "review" else list(q.choices)

    @staticmethod
    def _choose(labels: list[str], digit: str | int | None, option: str | None, text: str | None) -> str:
        if digit is not None and str(digit).strip():
            d = str(digit).strip()
            if not labels:
                raise AnswerError("bad_field", "this question takes free text, not a digit")
            if not d.isdigit() or not 1 <= int(d) <= len(labels):
                raise AnswerError("bad_field", f"digit must be 1..{len(labels)}")
            return labels[int(d) - 1]
        wanted = option if option is not None else text
        if wanted is None:
            raise AnswerError("bad_field", "answer needs digit, option or text")
        if not labels:
            return wanted
        for label in labels:  # rift matches approval answers exactly: map to the exact choice string
            if label == wanted:
                return label
        for label in labels:
            if label.lower() == wanted.strip().lower():
                return label
        if option is not None:
            raise AnswerError("bad_field", f"unknown option {option!r}; options: {labels}")
        return wanted  # free text to a choice ask: rift treats a non-choice as deny / passes it to the model

    # ---------- events in ----------
    def on_line(self, line: bytes | str) -> None:
        """One stdout line from rift; anything that is not a JSON object is kept as a notice, never fatal."""
        try:
            ev = json.loads(line)
        except ValueError:
            self._notice(f"non-JSON line from rift: {str(line)[:200]}")
            return
        if isinstance(ev, dict) and isinstance(ev.get("event"), str):
            self.on_event(ev)
        else:
            self._notice(f"unexpected line from rift: {str(line)[:200]}")

    def on_event(self, ev: dict) -> None:
        if self._pending_result is not None and ev["event"] != "edit_diff":
            self._flush_result()
        handler = getattr(self, "_ev_" + ev["event"], None)
        if handler is not None:  # unknown events are ignored (rift's additive-change rule)
            handler(ev)
        for listener in list(self.listeners):
            listener(ev)

    def _ev_ready(self, ev: dict) -> None:
        self.ready = ev
        for key in ("model", "version", "protocol_version", "num_ctx", "approve", "cwd"):
            if key in ev:
                self.meta[key] = ev[key]
        self.meta["session_path"] = ev.get("session")
        self.meta["commands"] = list(ev.get("commands") or [])
        self.meta["skills"] = [s.get("name") for s in ev.get("skills") or [] if isinstance(s, dict)]
        pv = ev.get("protocol_version", 1)
        if isinstance(pv, int) and pv > 1:
            self._notice(f"rift speaks protocol_version {pv}; this driver knows v1")
        self.feed(render.banner(ev))
        self._set_state("idle")

    def _ev_context(self, ev: dict) -> None:
        self.meta["context"] = {"used": ev.get("used"), "limit": ev.get("limit")}
        self.saving = False  # rift sends context once the session file is saved after `done`

    def _ev_history(self, ev: dict) -> None:
        msgs = [m for m in ev.get("messages") or [] if isinstance(m, dict)]
        self.meta["history_messages"] = len(msgs)
        self.feed(render.history(msgs))

    def _ev_capabilities(self, ev: dict) -> None:
        self.meta["approve"] = ev.get("approve", self.meta.get("approve"))
        self.meta["edit_review"] = ev.get("edit_review")

    def _ev_approval_changed(self, ev: dict) -> None:
        self.meta["approve"] = ev.get("approve")
        self.feed(
            render.notice(
                "approval "
                + ("on: tools ask first" if ev.get("approve") else "off: tools run without asking")
            )
        )

    def _ev_model_changed(self, ev: dict) -> None:
        self.meta["model"] = ev.get("model")
        self.meta["num_ctx"] = ev.get("num_ctx")
        note = ev.get("note") or ""
        self.feed(render.notice(f"model: {ev.get('model')}" + (f" ({note})" if note else "")))

    def _ev_models(self, ev: dict) -> None:
        self.meta["models"] = ev.get("models")

    def _ev_sessions(self, ev: dict) -> None:
        self.meta["sessions"] = ev.get("items")

    def _ev_plan(self, ev: dict) -> None:
        self.meta["plan"] = ev.get("items")
        self.feed(render.plan(ev.get("items") or []))

    def _ev_iteration(self, ev: dict) -> None:
        if self.turn is None:
            return
        self._flush()
        self.turn.segments.append("")
        if self.turn.segments[:-1] and self.turn.segments[-2].strip():
            self.feed(b"\r\n")
        if not self.questions:
            self._set_state("thinking")

    def _ev_thinking(self, ev: dict) -> None:
        text = ev.get("text") or ""
        if self.turn is None or not isinstance(text, str):
            return
        self.turn.thinking += text
        self.feed(render.thinking(text))
        self._thinking_open = True
        self._mark()

    def _ev_content(self, ev: dict) -> None:
        text = ev.get("text")
        if self.turn is None or not isinstance(text, str):
            return
        if not self.turn.segments:
            self.turn.segments.append("")
        self.turn.segments[-1] += text
        if self._thinking_open:  # the reply starts on its own line under the dim reasoning
            self._thinking_open = False
            self.feed(b"\r\n")
        self.feed(render.content(text))
        if not self.questions:
            self._set_state("responding")
        self._mark()

    def _ev_tool_start(self, ev: dict) -> None:
        self._flush()
        self._thinking_open = False
        name = str(ev.get("name", "?"))
        args = parse_args(ev.get("args"))
        self.feed(render.tool_start(name, args))
        if self.turn is None:
            return
        self.turn.tools += 1
        tool_id = f"rift-{self.generation}-{self.turn.number}-{self.turn.tools}"
        self.turn.open_tools.append(tool_id)
        self.host.tool_use(tool_id, name, args)
        if not self.questions:
            self._set_state("thinking")

    def _ev_tool_result(self, ev: dict) -> None:
        ok = ev.get("ok") is True
        preview = str(ev.get("preview", ""))
        self.feed(render.tool_result(str(ev.get("name", "?")), ok, preview))
        if self.turn is None:
            return
        if self.turn.open_tools:
            tool_id = self.turn.open_tools.popleft()
        else:  # a result without a start (never seen; keep the pairing total)
            self.turn.tools += 1
            tool_id = f"rift-{self.generation}-{self.turn.number}-{self.turn.tools}"
        if ok and ev.get("name") in EDIT_TOOLS:
            self._pending_result = (tool_id, preview)  # an edit_diff follows: attach it to this result
            if self.schedule is not None:  # rift < 2.6 sends no edit_diff: do not hold the result for long
                self.schedule(0.25, self._flush_result)
        else:
            self.host.tool_result(tool_id, preview, not ok)

    def _flush_result(self, diff: dict | None = None) -> None:
        pending, self._pending_result = self._pending_result, None
        if pending is None:
            return
        tool_id, content = pending
        if diff is not None:
            lines = [str(x) for x in diff.get("diff") or []]
            content += (
                f"\n{diff.get('path', '')} +{diff.get('added', 0)} -{diff.get('removed', 0)}\n"
                + "\n".join(lines)
            )
        self.host.tool_result(tool_id, content, False)

    def _ev_edit_diff(self, ev: dict) -> None:
        self.meta["last_diff"] = {k: ev.get(k) for k in ("path", "added", "removed")}
        self.feed(render.edit_diff(ev))
        self._flush_result(ev)

    def _ev_ask(self, ev: dict) -> None:
        rid = ev.get("id")
        if not isinstance(rid, int):
            return
        question = str(ev.get("question", ""))
        choices = [str(c) for c in ev.get("choices") or []]
        detail = [str(d) for d in ev.get("detail") or []]
        kind = ask_kind(question, choices)
        self._flush()
        self.feed(render.ask(question, choices, detail))
        self._open(
            OpenQuestion(rid, "ask", choices, turn_bound=kind != "trust"),
            kind,
            question,
            options_for(choices),
            detail,
        )

    def _ev_edit_review(self, ev: dict) -> None:
        rid = ev.get("id")
        if not isinstance(rid, int):
            return
        path = str(ev.get("path", ""))
        text = f"Apply this {ev.get('tool', 'edit')} to {path}?"
        detail = {
            "path": path,
            "tool": ev.get("tool"),
            "old": ev.get("old", ""),
            "new": ev.get("new", ""),
            "segments": ev.get("segments"),
        }
        self._flush()
        self.feed(render.review(ev))
        self._open(
            OpenQuestion(
                rid, "review", list(REVIEW_OPTIONS), turn_bound=True, proposal=str(ev.get("new", ""))
            ),
            "permission",
            text,
            options_for(REVIEW_OPTIONS),
            detail,
        )

    def _ev_edit_review_closed(self, ev: dict) -> None:
        qid = self.by_rift_id.get(ev.get("id"))  # type: ignore[arg-type]
        if qid is not None:
            self._close(qid, "orphaned")

    def _ev_warning(self, ev: dict) -> None:
        text = str(ev.get("text", ""))
        if self.turn is not None and text == CANCELLED_WARNING:
            self.turn.cancelled = True
        elif self.turn is not None and text.startswith(ERROR_PREFIX):
            self.turn.error = text[len(ERROR_PREFIX) :]
        self._notice(text, warn=True)

    def _ev_info(self, ev: dict) -> None:
        self._notice(str(ev.get("text", "")))

    def _ev_task_started(self, ev: dict) -> None:
        self.feed(render.notice(f"task {ev.get('id')} started: {ev.get('label', '')}"))

    def _ev_task_finished(self, ev: dict) -> None:
        mark = "✓" if ev.get("ok") else "✗"
        self.feed(render.notice(f"task {ev.get('id')} {mark} {ev.get('label', '')}: {ev.get('preview', '')}"))

    def _ev_subagent_started(self, ev: dict) -> None:
        self.feed(render.notice(f"sub-agent {ev.get('tag')} ({ev.get('model')}): {ev.get('label', '')}"))

    def _ev_subagent(self, ev: dict) -> None:
        self.feed(render.notice(f"[{ev.get('tag')}] {ev.get('text', '')}", warn=bool(ev.get("warn"))))

    def _ev_subagent_finished(self, ev: dict) -> None:
        self.feed(render.notice(f"sub-agent {ev.get('tag')} finished in {ev.get('steps')} steps"))

    def _ev_done(self, ev: dict) -> None:
        self.saving = True
        turn = self.turn
        if turn is None:  # a turn started outside litbridge (`input`): nothing to terminate
            self.feed(render.done(ev.get("stats") or {}, "ok"))
            return
        self._flush()
        for qid in [q for q, o in self.questions.items() if o.turn_bound]:
            self._close(qid, "orphaned", settle=False)  # rift never closes asks itself
        raw_stats = ev.get("stats")
        stats: dict[str, Any] = raw_stats if isinstance(raw_stats, dict) else {}
        self.meta["last_stats"] = stats
        self.turn = None
        text = turn.text(final=True)
        if not turn.tracked:
            reason = "error" if turn.error is not None else "cancelled" if turn.cancelled else "ok"
        elif turn.error is not None:
            reason = "error"
            self.host.turn_error(turn.error, "api_error")
        elif turn.cancelled or turn.cancel_sent:
            reason = "cancelled"
            self.host.turn_interrupted(text)
        else:
            reason = "ok"
            self.host.turn_complete(text, usage_from_stats(stats), "transcript")
        self.feed(render.done(stats, reason))
        self._set_state("dialog" if self.questions else "idle")
        if not self.questions:
            self.host.input_ready()

    # ---------- process end ----------
    def on_exit(self, code: int | None) -> None:
        """rift is gone: orphan every question and end the turn in flight with turn_error(cli_exited)."""
        self._flush_result()
        self._flush()
        for qid in list(self.questions):
            self._close(qid, "orphaned", settle=False)
        turn, self.turn = self.turn, None
        self.feed(render.notice(f"rift exited (code {code})", warn=True))
        if turn is not None:
            self.host.turn_error(f"rift exited (code {code})", "cli_exited")
        self.state = "dead"

    # ---------- questions ----------
    def _open(self, q: OpenQuestion, kind: str, text: str, options: list[dict], detail: Any) -> None:
        qid = self.host.open_question(kind, text, options, detail, "rift")
        self.questions[qid] = q
        self.by_rift_id[q.rift_id] = qid
        self._set_state("dialog")

    def _close(self, qid: str, reason: str, settle: bool = True) -> None:
        q = self.questions.pop(qid, None)
        if q is None:
            return
        self.by_rift_id.pop(q.rift_id, None)
        self.host.close_question(qid, reason)
        if settle and not self.questions and self.state == "dialog":
            self._set_state("thinking" if self.turn is not None else "idle")
            if self.turn is None:
                self.host.input_ready()

    # ---------- coalesced replace ----------
    def _mark(self) -> None:
        if self.schedule is None or self.coalesce <= 0:
            self._flush()
        elif not self._flush_pending:
            self._flush_pending = True
            self.schedule(self.coalesce, self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        if self.turn is None:
            return
        if self.turn.thinking != self._sent_thinking:
            self._sent_thinking = self.turn.thinking
            self.host.turn_thinking(thinking_line(self.turn.thinking))
        text = self.turn.text()
        if text != self._sent_text:
            self._sent_text = text
            self.host.turn_text(text)

    def _notice(self, text: str, warn: bool = False) -> None:
        self.notices.append(("warning: " if warn else "") + text)
        self.feed(render.notice(text, warn=warn))

    def info(self) -> dict[str, Any]:
        """Metadata for list/dump: model, version, session path, context, approval, last stats, notices."""
        m = self.meta
        return {
            "model": m.get("model"),
            "cli_version": m.get("version"),
            "transcript_path": m.get("session_path"),
            "rift": {
                "protocol_version": m.get("protocol_version"),
                "num_ctx": m.get("num_ctx"),
                "context": m.get("context"),
                "approve": m.get("approve"),
                "edit_review": m.get("edit_review"),
                "commands": m.get("commands"),
                "skills": m.get("skills"),
                "plan": m.get("plan"),
                "models": m.get("models"),
                "last_stats": m.get("last_stats"),
                "last_diff": m.get("last_diff"),
                "history_messages": m.get("history_messages"),
                "notices": list(self.notices),
                "open_questions": len(self.questions),
            },
        }
