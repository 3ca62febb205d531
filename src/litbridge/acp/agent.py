"""The ACP agent of `litbridge acp`: each ACP session is one daemon session, driven over one connection.

Built on the official `agent-client-protocol` SDK (`acp.run_agent`: JSON-RPC over stdio, requests served
concurrently, so `session/cancel` acts while a `session/prompt` waits; the pydantic models of `acp.schema`
for every message). The daemon side is `litbridge.client`, with the same `Bridge` / `Tracker` as
`litbridge mcp` (one connection following every session, with the history the daemon still buffers).

Each ACP session has a `SessionView`: it follows its daemon session's events and turns them into
`session/update` notifications, asks the client about the CLI's questions (`session/request_permission`)
and resolves the `session/prompt` waiting for a turn when its terminal event arrives. A todo-list tool call
(Claude's TodoWrite, Codex's update_plan) is a `plan` update instead of a tool call; the session's title
(`session_info_update`) is sent when the session is opened and when the CLI reports a new one; a
multiple-choice question that is not a permission is an `elicitation/create` form when the client takes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import unquote, urlparse

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.interfaces import Agent
from acp.interfaces import Client as AcpClient
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    CloseSessionResponse,
    ElicitationFormSessionMode,
    ElicitationSchema,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    TextContentBlock,
    ToolCallUpdate,
    Usage,
)

from litbridge import __version__
from litbridge.acp.mapping import (
    TextDeltas,
    choice_schema,
    option_kinds,
    plan_entries,
    streams_text,
    tool_kind,
)
from litbridge.client import TERMINAL_EVENTS, Client, ConnectionLost, Event, EventStream, LitbridgeError
from litbridge.client.client import question_detail_text
from litbridge.mcp.tracker import Bridge, brief

CATCH_UP_TIMEOUT = 10.0
"""Seconds `session/load` waits for the replayed history to be read before sending what it has."""
TOOL_CALL_GRACE = 8.0
"""Seconds a permission question waits for its tool call's transcript record before one is made up (the record
usually comes first or within milliseconds; on a loaded machine Claude's came more than 3 s after its dialog)."""

NOT_IN_EVENTS = {
    True: "[typed into the CLI directly (attach / web view): this CLI's driver reads no record of its text]",
    False: "[sent by another litbridge client: its text is not in the daemon's events (an older daemon)]",
}
"""The user message shown for a turn whose `accepted` carries no `content` and whose prompt this process did not
send: an organic turn of a driver that reads no transcript (the generic one), or a daemon without
`accepted.content`."""

SESSION_CLOSED = "session_closed"
"""The error a prompt waiting on a session fails with when `session/close` stops following it: a cancel."""

_INVALID = {"bad_field", "bad_key", "too_large", "cli_not_found", "no_question"}


@dataclass
class CreateDefaults:
    """What `session/new` creates when the client's `_meta` does not say: the command line's create options."""

    cli: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    timeout: float = 600.0


def rpc_error(exc: LitbridgeError) -> RequestError:
    """A daemon or connection error as a JSON-RPC error: session_not_found is -32002 (resource not found), a
    bad request -32602 (invalid params), the rest -32603; `data` keeps the daemon's code."""
    ev = exc.event or {}
    data: dict[str, Any] = {"code": exc.code}
    if isinstance(ev.get("session"), str):
        data["session"] = ev["session"]
    if exc.code == "session_not_found":
        where = f"{ev['session']}: " if isinstance(ev.get("session"), str) else ""
        return RequestError(-32002, f"{where}{exc.message}", data)
    if exc.code in _INVALID:
        return RequestError(-32602, exc.message, data)
    return RequestError(-32603, exc.message, data)


def prompt_text(blocks: list[Any]) -> str:
    """The prompt as the text typed into the CLI: text blocks as they are, resource links as their path
    (file URIs) or URI. Other content (images, audio, embedded resources) is not advertised and refused."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            uri = urlparse(block.uri)
            ref = unquote(uri.path) if uri.scheme == "file" else block.uri
            if parts and not parts[-1][-1:].isspace():
                parts.append(" ")
            parts.append(ref + " ")
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise RequestError.invalid_params(
                {"message": f"prompt content of type {kind!r} is not supported (text and resource_link are)"}
            )
    text = "".join(parts).strip()
    if not text:
        raise RequestError.invalid_params({"message": "the prompt is empty"})
    return text


def wire_delta(deltas: TextDeltas, ev: Event) -> str:
    """The chunk a `replace` adds: the wire's own delta (`delta`, what the client rebuilt from `append`) when
    it continues exactly what was streamed, without comparing the whole text again; else `TextDeltas`."""
    text = str(ev.get("text") or "")
    wire = ev.get("delta")
    if isinstance(wire, dict) and not deltas.held and wire.get("offset") == len(deltas.sent):
        deltas.sent = text
        return str(wire.get("text") or "")
    return deltas.replace(text)


@dataclass
class _Turn:
    deltas: TextDeltas = field(default_factory=TextDeltas)
    tools: dict[str, str] = field(default_factory=dict)
    """Open tool calls of the turn (tool_use_id -> status: pending / in_progress)."""
    plans: set[str] = field(default_factory=set)
    """Todo-list tool calls of the turn, sent as `plan` updates (their results are not shown)."""
    tool_opened: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at each tool call: a permission dialog is seen on the screen before the transcript's tool_use."""


class SessionView:
    """One ACP session: the events of daemon session `key` as session/update notifications."""

    def __init__(self, agent: LitbridgeAgent, key: str) -> None:
        self.agent = agent
        self.key = key
        self.client: Client | None = None
        self.turns: OrderedDict[str, _Turn] = OrderedDict()
        self.announced: set[str] = set()
        """Turns whose user message was shown (or that the client sent itself)."""
        self.mine: dict[str, asyncio.Future[Event]] = {}
        """Prompts this view sent, by command id (the `accepted` reply carries it as `re`), until accepted."""
        self.ends: dict[str, asyncio.Future[Event]] = {}
        """Turns a `session/prompt` waits for, by turn id."""
        self.asking: dict[str, asyncio.Task[None]] = {}
        self.in_grace: set[str] = set()
        """Questions still waiting for their tool call (`TOOL_CALL_GRACE`): nothing asked of the client yet."""
        self.records: bool | None = None
        """The session follows a record of the CLI's (`dump.transcript_path`), where tool calls come from; None
        until a question needs to know (a record may show up later: only True is kept)."""
        self.synthetic: set[str] = set()
        """Tool calls made up for questions that no tool call was open for."""
        self.usage: dict[str, int] = {}
        self.title: str | None = None
        """The title last sent (`session_info_update`)."""
        self.stream_text = True
        """Stream `replace` deltas; False for drivers whose text is read off a rendered screen (mapping)."""
        self._titling = asyncio.Lock()
        self.skip_to = 0
        """Events up to this seq were already sent (the replayed history of `session/load`)."""
        self._task: asyncio.Task[None] | None = None
        self._stream: EventStream | None = None

    # --- following the daemon session -----------------------------------------------------------------

    def listen(self, client: Client) -> None:
        """Register for the session's events (before anything is replayed or sent, so nothing is missed)."""
        self.stop()
        self.client = client
        self.skip_to = 0  # a new connection (maybe to a restarted daemon, numbering afresh)
        self._stream = client.events(self.key)

    def start(self) -> None:
        assert self._stream is not None
        self._task = asyncio.create_task(self._follow(self._stream), name=f"litbridge-acp {self.key}")

    @property
    def following(self) -> bool:
        return self._task is not None and not self._task.done()

    def stop(self, reason: str = "stopped following the session", code: str = "closed") -> None:
        """Stop following; a prompt still waiting fails with `reason` (and `code`)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for task in self.asking.values():
            task.cancel()
        self.asking.clear()
        self._fail(LitbridgeError(code, reason))  # not ConnectionLost: the daemon connection is fine

    async def _follow(self, stream: EventStream) -> None:
        error: LitbridgeError | None = None
        try:
            async for ev in stream:
                seq = ev.get("seq")
                if isinstance(seq, int) and seq <= self.skip_to:
                    continue
                await self.apply(ev, live=True)
        except LitbridgeError as exc:
            error = exc
        except ConnectionError:  # the ACP client went away: nothing left to tell
            error = ConnectionLost("the ACP client went away")
        else:
            error = ConnectionLost("the connection to the daemon was closed")
        finally:
            if error is not None and self._task is asyncio.current_task():  # else stop() did it
                self._fail(error)

    def _fail(self, exc: LitbridgeError) -> None:
        for fut in [*self.mine.values(), *self.ends.values()]:
            if not fut.done():
                fut.set_exception(exc)

    # --- events -> session/update ---------------------------------------------------------------------

    async def update(self, update: Any) -> None:
        await self.agent.conn.session_update(session_id=self.key, update=update)

    def turn(self, tid: str) -> _Turn:
        rec = self.turns.get(tid)
        if rec is None:
            rec = self.turns[tid] = _Turn()
            while len(self.turns) > 64:
                self.turns.popitem(last=False)
        return rec

    async def apply(self, ev: Event, live: bool) -> None:
        """Send what `ev` means to the client. `live` False: replaying history (no questions asked)."""
        kind = ev.get("event")
        tid = ev.get("turn_id")
        if kind == "accepted" and isinstance(tid, str):
            self.turn(tid)  # the session's latest turn from now on: a `question` names none (see `_ask`)
            fut = self.mine.pop(str(ev.get("re")), None) if live else None
            if fut is not None:  # a prompt of ours: the client shows it itself
                self.announced.add(tid)
                self.ends.setdefault(tid, asyncio.get_running_loop().create_future())
                if not fut.done():
                    fut.set_result(ev)
                return
            if tid not in self.announced:
                if len(self.announced) > 4096:  # only a turn's own `accepted` repeats it, and that comes soon
                    self.announced.clear()
                self.announced.add(tid)
                prompt = self.agent.prompt_of(self.key, tid) or ev.get("content")  # ours whole, else the echo
                if not (isinstance(prompt, str) and prompt):
                    prompt = NOT_IN_EVENTS[bool(ev.get("organic"))]
                await self.update(update_user_message_text(prompt))
            return
        if kind == "question":
            if live and ev.get("question_id") is not None:
                qid = str(ev["question_id"])
                if qid not in self.asking:
                    self.asking[qid] = asyncio.create_task(self._ask(ev), name=f"litbridge-acp ask {qid}")
            return
        if kind == "question_closed":
            qid = str(ev.get("question_id"))
            task = self.asking.pop(qid, None)
            if task is not None and (ev.get("reason") != "answered" or qid in self.in_grace):
                task.cancel()  # answered elsewhere before the client was asked: nothing to ask (its `finally`
                # takes the question out of `in_grace`)
            if f"question-{qid}" in self.synthetic:
                self.synthetic.discard(f"question-{qid}")
                await self.update(
                    update_tool_call(
                        f"question-{qid}", status="completed" if ev.get("reason") == "answered" else "failed"
                    )
                )
            return
        if kind in ("killed", "reaped_idle"):
            self._fail(LitbridgeError("session_not_found", f"the session was {kind}", ev))
            return
        if not isinstance(tid, str):
            return
        rec = self.turn(tid)
        if kind == "replace":
            await self._progress(rec)
            delta = wire_delta(rec.deltas, ev) if self.stream_text else ""
            if delta:
                await self.update(update_agent_message_text(delta))
        elif kind == "reasoning":
            text = ev.get("text")
            if isinstance(text, str) and text:
                await self.update(update_agent_thought_text(text))
        elif kind == "tool_use":
            await self._progress(rec)
            tool_id = str(ev.get("tool_use_id") or f"{tid}-tool-{len(rec.tools) + len(rec.plans)}")
            name = str(ev.get("name") or "tool")
            entries = plan_entries(name, ev.get("input"))
            if entries is not None:  # the whole todo list: the editor's plan, not a tool call
                rec.plans.add(tool_id)
                await self.update(update_plan(plan_entry(**e) for e in entries))  # type: ignore[arg-type]
                return
            rec.tools[tool_id] = "pending"
            rec.tool_opened.set()
            await self.update(
                start_tool_call(
                    tool_id,
                    f"{name}: {brief(ev.get('input'), 120)}",
                    kind=tool_kind(name),  # type: ignore[arg-type]
                    status="pending",
                    raw_input=ev.get("input"),
                )
            )
        elif kind == "tool_result":
            await self._progress(rec)
            tool_id = str(ev.get("tool_use_id"))
            if tool_id in rec.plans:
                rec.plans.discard(tool_id)
                return
            rec.tools.pop(tool_id, None)
            content = ev.get("content")
            await self.update(
                update_tool_call(
                    tool_id,
                    status="failed" if ev.get("is_error") else "completed",
                    content=[tool_content(text_block(str(content)))] if content else None,
                    raw_output=content,
                )
            )
        elif kind in TERMINAL_EVENTS:
            final = ev.get("content")
            if isinstance(final, str):
                delta = rec.deltas.finish(final)
                if delta:
                    await self.update(update_agent_message_text(delta))
            status: Literal["completed", "failed"] = "completed" if kind == "complete" else "failed"
            for tool_id in list(rec.tools):
                await self.update(update_tool_call(tool_id, status=status))
            rec.tools.clear()
            rec.plans.clear()
            self._count_usage(ev.get("usage"))
            if live:
                await self.send_title()  # the CLI may have named the conversation during the turn
            fut = self.ends.get(tid)
            if fut is not None and not fut.done():
                fut.set_result(ev)
        elif kind == "state":
            await self._progress(rec)

    async def send_title(self) -> None:
        """`session_info_update` with the session's title, when it is not the one last sent: the title the CLI
        reported in its OSC 7501 status (`dump.osc_state.title`), else the last one, else the session's name."""
        async with self._titling:  # one check at a time: the same title is never sent twice
            await self._send_title()

    async def _send_title(self) -> None:
        client = self.client
        title = self.title or self.key
        if client is not None:
            try:
                osc = (await client.dump(self.key)).get("osc_state")
            except (LitbridgeError, ConnectionError):  # the session or the daemon is gone: keep the last
                osc = None
            if isinstance(osc, dict) and isinstance(osc.get("title"), str) and osc["title"].strip():
                title = osc["title"]
        if title != self.title:
            self.title = title
            await self.update(SessionInfoUpdate(session_update="session_info_update", title=title))

    def send_title_later(self) -> None:
        """`send_title` once the response being returned is out: `session/new` and `session/resume` must have
        answered before updates about their session arrive. The SDK queues a handler's response in the step the
        handler returns, so a task started in the handler writes after it."""

        async def send() -> None:
            with contextlib.suppress(ConnectionError):  # the ACP client went away meanwhile
                await self.send_title()

        task = asyncio.create_task(send(), name=f"litbridge-acp title {self.key}")
        self.agent.background.add(task)
        task.add_done_callback(self.agent.background.discard)

    async def _progress(self, rec: _Turn) -> None:
        """The turn moved on: its tool calls waiting to start (or for an answer) are running now."""
        for tool_id, status in rec.tools.items():
            if status == "pending":
                rec.tools[tool_id] = "in_progress"
                await self.update(update_tool_call(tool_id, status="in_progress"))

    def _count_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for k, v in usage.items():
                if isinstance(v, int) and not isinstance(v, bool):
                    self.usage[k] = self.usage.get(k, 0) + v

    def usage_total(self) -> Usage | None:
        """The session's token counts so far, summed over the turns seen here (`PromptResponse.usage`)."""
        u = self.usage
        if not u:
            return None
        inp, out = u.get("input_tokens", 0), u.get("output_tokens", 0)
        cr, cw = u.get("cache_read_tokens", 0), u.get("cache_creation_tokens", 0)
        return Usage(
            total_tokens=inp + out + cr + cw,
            input_tokens=inp,
            output_tokens=out,
            cached_read_tokens=cr or None,
            cached_write_tokens=cw or None,
        )

    # --- questions -> session/request_permission, or elicitation/create ------------------------------

    async def _follows_record(self) -> bool:
        """Whether a tool call can still come from the session's record: not for a driver that follows none (the
        generic one), whose questions would otherwise wait out `TOOL_CALL_GRACE` for nothing."""
        if self.records or self.client is None:
            return True
        try:
            info = await self.client.dump(self.key)
        except (LitbridgeError, ConnectionError):
            return True  # cannot tell: wait as for a record
        self.records = info.get("transcript_path") is not None  # a record found stays; none is asked again
        return self.records

    async def _ask(self, q: Event) -> None:
        """Ask the client; its choice answers the question (by id and digit), a cancelled request interrupts."""
        qid = str(q["question_id"])
        options = [o for o in q.get("options") or [] if isinstance(o, dict) and o.get("digit") is not None]
        if not options:
            return  # a free-text question: ACP's permission request cannot carry it (answer it in attach)
        text = str(q.get("text") or "The CLI asks")
        labels = [str(o.get("label") or o.get("digit")) for o in options]
        digits = [str(o["digit"]) for o in options]
        tid = q.get("turn_id")
        if not isinstance(tid, str):  # a question names no turn: the session's latest one
            tid = next(reversed(self.turns), None)
        rec = self.turn(tid) if isinstance(tid, str) else None
        if rec is not None and not rec.tools and await self._follows_record():
            # the dialog is read off the screen, its tool call off the transcript, which may come a moment later
            self.in_grace.add(qid)
            try:
                await asyncio.wait_for(rec.tool_opened.wait(), TOOL_CALL_GRACE)
            except asyncio.TimeoutError:
                print(
                    f"litbridge acp: {self.key}: question {qid}: no tool call in the CLI's record after "
                    f"{TOOL_CALL_GRACE:g} s; asking with a tool call of its own",
                    file=sys.stderr,
                    flush=True,
                )
            finally:
                self.in_grace.discard(qid)
        open_tools = list(rec.tools) if rec is not None else []
        if q.get("kind") == "choice" and self.agent.elicitation:
            await self._elicit(qid, text, labels, digits, open_tools[-1] if open_tools else None)
            return
        content: list[Any] | None = None
        if open_tools:
            tool_id = open_tools[-1]
        else:
            # no tool call to name (none recorded yet): what the dialog shows with its question (the command, the
            # file) is the made-up call's content, so the editor still shows what it is asked to approve
            tool_id = f"question-{qid}"
            self.synthetic.add(tool_id)
            shown = question_detail_text(q.get("detail"))
            content = [tool_content(text_block(shown))] if shown else None
            await self.update(start_tool_call(tool_id, text, kind="other", status="pending", content=content))
        perm = [
            PermissionOption(option_id=str(o["digit"]), name=label, kind=kind)  # type: ignore[arg-type]
            for o, label, kind in zip(options, labels, option_kinds(labels), strict=True)
        ]
        try:
            reply = await self.agent.conn.request_permission(
                session_id=self.key,
                tool_call=ToolCallUpdate(tool_call_id=tool_id, title=text, status="pending", content=content),
                options=perm,
            )
            client = self.client
            if client is None:
                return
            if reply.outcome.outcome == "selected":
                await client.answer(self.key, question_id=qid, digit=reply.outcome.option_id)
            else:
                await client.interrupt(self.key)
        except (LitbridgeError, ConnectionError, RequestError) as exc:
            # answered or dismissed meanwhile, the turn already over, or the ACP client gone
            print(f"litbridge acp: {self.key}: question {qid}: {exc}", file=sys.stderr, flush=True)
        finally:
            if self.asking.get(qid) is asyncio.current_task():
                del self.asking[qid]

    async def _elicit(
        self, qid: str, text: str, labels: list[str], digits: list[str], tool_id: str | None
    ) -> None:
        """A multiple-choice question as an `elicitation/create` form (one required choice): the accepted choice
        answers it, a declined or cancelled form interrupts the turn (as a cancelled permission request does)."""
        try:
            reply = await self.agent.conn.create_elicitation(
                message=text,
                mode=ElicitationFormSessionMode(
                    session_id=self.key,
                    tool_call_id=tool_id,
                    requested_schema=ElicitationSchema.model_validate(choice_schema(labels, digits)),
                ),
            )
            client = self.client
            if client is None:
                return
            action = getattr(reply, "action", None)
            if action == "accept":
                choice = (getattr(reply, "content", None) or {}).get("choice")
                if choice not in digits:  # the question stays open (attach, the web view)
                    raise RequestError.invalid_params({"message": f"not one of the choices: {choice!r}"})
                await client.answer(self.key, question_id=qid, digit=choice)
            else:
                await client.interrupt(self.key)
        except (LitbridgeError, ConnectionError, RequestError) as exc:
            print(f"litbridge acp: {self.key}: question {qid}: {exc}", file=sys.stderr, flush=True)
        finally:
            if self.asking.get(qid) is asyncio.current_task():
                del self.asking[qid]

    # --- prompts --------------------------------------------------------------------------------------

    async def prompt(self, client: Client, text: str) -> Event:
        """Send `text` as a turn; the turn's terminal event (its updates all sent before it returns)."""
        cmd_id = f"acp-{secrets.token_hex(6)}"
        loop = asyncio.get_running_loop()
        accepted_fut: asyncio.Future[Event] = loop.create_future()
        self.mine[cmd_id] = accepted_fut
        try:
            accepted = await client.request("send", {"session": self.key, "content": text}, id=cmd_id)
            tid = str(accepted.get("turn_id"))
            self.agent.note_prompt(self.key, tid, text)
            await accepted_fut  # seen by the view too: from now on its end is awaited in `ends`
        finally:
            self.mine.pop(cmd_id, None)
        end = self.ends.setdefault(tid, loop.create_future())
        try:
            return await end
        finally:
            self.ends.pop(tid, None)


class LitbridgeAgent:
    """The `acp.interfaces.Agent` served on stdio: ACP requests to daemon commands through `bridge`."""

    def __init__(self, bridge: Bridge, defaults: CreateDefaults) -> None:
        self.bridge = bridge
        self.defaults = defaults
        self.views: dict[str, SessionView] = {}
        self.closing: set[str] = set()
        """Sessions being closed (`session/close`): their waiting prompts end as cancelled."""
        self.conn: AcpClient = None  # type: ignore[assignment]
        """The editor's side of the connection (set by `on_connect`)."""
        self.elicitation = False
        """The client takes `elicitation/create` forms (its `initialize` said `elicitation.form`)."""
        self.background: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: AcpClient) -> None:
        self.conn = conn

    async def call(self, fn: Callable[[Client], Awaitable[Any]]) -> Any:
        """Run `fn` with the daemon client; its errors become JSON-RPC errors (a lost daemon: reconnect next)."""
        try:
            return await fn(await self.bridge.client())
        except ConnectionLost as exc:
            self.bridge.tracker.failure = self.bridge.tracker.failure or exc
            raise rpc_error(exc) from None
        except LitbridgeError as exc:
            raise rpc_error(exc) from None

    def prompt_of(self, key: str, tid: str) -> str | None:
        log = self.bridge.tracker.sessions.get(key)
        rec = log.turns.get(tid) if log is not None else None
        return rec.prompt if rec is not None else None

    def note_prompt(self, key: str, tid: str, text: str) -> None:
        self.bridge.tracker.note_prompt(key, tid, text)

    async def view(self, client: Client, key: str) -> SessionView:
        """The followed view of `key` (a new one, or one re-bound to a new daemon connection)."""
        v = self.views.get(key)
        if v is None:
            v = self.views[key] = SessionView(self, key)
        if v.client is not client or not v.following:
            v.listen(client)
            v.start()
        return v

    async def close(self) -> None:
        for task in list(self.background):
            task.cancel()
        for v in self.views.values():
            v.stop("litbridge acp is exiting")
        self.views.clear()

    # --- ACP requests ---------------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any
    ) -> InitializeResponse:
        elicit = getattr(client_capabilities, "elicitation", None)
        self.elicitation = getattr(elicit, "form", None) is not None
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=False),
                mcp_capabilities=McpCapabilities(http=True, sse=True),  # passed on to Claude Code (_mcp_args)
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name="litbridge", title="litbridge", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        """Nothing to authenticate (no method is advertised): accepted, for clients that call it anyway."""
        return AuthenticateResponse()

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **meta: Any
    ) -> NewSessionResponse:
        spec = _meta_spec(meta)
        d = self.defaults
        cli = spec.get("cli") or d.cli
        key = spec.get("name") or f"acp-{secrets.token_hex(4)}"
        args = list(spec["args"]) if "args" in spec else list(d.args or [])
        args += _mcp_args(cli or "claude", mcp_servers or [])
        env = {**(d.env or {}), **spec.get("env", {})} or None

        async def create(c: Client) -> SessionView:
            ready = await c.create(
                key,
                cli,
                args=args or None,
                working_dir=cwd,
                env=env,
                model=spec.get("model") or d.model,
                timeout=d.timeout,
                **d.options,
            )
            v = await self.view(c, str(ready.get("session") or key))
            v.stream_text = streams_text((await c.dump(v.key)).get("driver"))
            return v

        v = await self.call(create)
        v.send_title_later()
        return NewSessionResponse(session_id=v.key)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        rows = await self.call(lambda c: c.list())
        out = []
        for s in sorted(rows, key=lambda s: str(s.get("name"))):
            name = str(s.get("name"))
            key = f"{name}:{s['channel_id']}" if s.get("channel_id") else name
            where = s.get("working_dir") if isinstance(s.get("working_dir"), str) else None
            if cwd is not None and where != cwd:
                continue
            out.append(
                SessionInfo(
                    session_id=key,
                    cwd=where or "/",
                    title=f"{key} ({s.get('cli')}, {s.get('state')})",
                    field_meta={"litbridge": {k: s.get(k) for k in ("cli", "state", "turn_id", "model")}},
                )
            )
        return ListSessionsResponse(sessions=out)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **_: Any
    ) -> LoadSessionResponse:
        """Replay the session's history the daemon still buffers (and this process saw), then follow it."""

        async def load(c: Client) -> int:
            dump = await c.dump(session_id)  # session_not_found first
            old = self.views.pop(session_id, None)
            if old is not None:
                old.stop()
            v = self.views[session_id] = SessionView(self, session_id)
            v.stream_text = streams_text(dump.get("driver"))
            v.listen(c)  # from now on; what came before is the tracker's
            tracker = self.bridge.tracker
            await tracker.caught_up(c.last_seq, CATCH_UP_TIMEOUT)
            log = tracker.sessions.get(session_id)
            history = list(log.events) if log is not None else []
            for _n, ev in history:
                seq = ev.get("seq")
                if isinstance(seq, int):
                    v.skip_to = max(v.skip_to, seq)
                await v.apply(ev, live=False)
            v.start()
            await v.send_title()
            for q in list(log.questions.values()) if log is not None else []:
                await v.apply(q, live=True)  # still open: ask now
            return len(history)

        replayed = await self.call(load)
        gap = self.bridge.tracker.gap
        meta: dict[str, Any] = {"replayed_events": replayed}
        if gap is not None:
            meta["missing_seqs"] = list(gap)
        return LoadSessionResponse(field_meta={"litbridge": meta})

    async def resume_session(
        self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any
    ) -> ResumeSessionResponse:
        async def resume(c: Client) -> SessionView:
            dump = await c.dump(session_id)  # session_not_found first
            v = await self.view(c, session_id)
            v.stream_text = streams_text(dump.get("driver"))
            return v

        (await self.call(resume)).send_title_later()
        return ResumeSessionResponse()

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """Kill the session; a prompt still waiting on it ends as cancelled (the client asked for it)."""
        self.closing.add(session_id)
        try:
            await self.call(lambda c: c.kill(session_id))
            v = self.views.pop(session_id, None)
            if v is not None:
                v.stop("the session was closed", code=SESSION_CLOSED)
        finally:
            self.closing.discard(session_id)
        return CloseSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        text = prompt_text(prompt)

        async def go(c: Client) -> tuple[Event, SessionView]:
            v = await self.view(c, session_id)
            return await v.prompt(c, text), v

        try:
            end, v = await self.call(go)
        except RequestError as exc:
            closed = isinstance(exc.data, dict) and exc.data.get("code") == SESSION_CLOSED
            if closed or session_id in self.closing:
                return PromptResponse(stop_reason="cancelled")
            raise
        kind = end.get("event")
        if kind == "turn_error" and session_id in self.closing:
            kind = "interrupted"  # the kill of session/close ended it
        if kind == "turn_error":
            raise RequestError(
                -32603,
                str(end.get("message") or "the turn failed"),
                {
                    "code": "turn_error",
                    "kind": end.get("kind"),
                    "detail": end.get("detail"),
                    "turn_id": end.get("turn_id"),
                },
            )
        return PromptResponse(
            stop_reason="cancelled" if kind == "interrupted" else "end_turn",
            usage=v.usage_total(),
            field_meta={"litbridge": {"turn_id": end.get("turn_id"), "exit_code": end.get("exit_code")}},
        )

    async def cancel(self, session_id: str, **_: Any) -> None:
        try:
            await self.call(lambda c: c.interrupt(session_id))
        except RequestError as exc:  # nothing running (no_turn), or no such session: nothing to cancel
            print(f"litbridge acp: cancel {session_id}: {exc}", file=sys.stderr, flush=True)


def _meta_spec(meta: dict[str, Any]) -> dict[str, Any]:
    """`session/new`'s `_meta.litbridge`: {cli, name, args, env, model}, type-checked."""
    spec = meta.get("litbridge")
    if spec is None:
        return {}
    bad = RequestError.invalid_params
    if not isinstance(spec, dict):
        raise bad({"message": "_meta.litbridge must be an object"})
    for k in ("cli", "name", "model"):
        if k in spec and not (isinstance(spec[k], str) and spec[k]):
            raise bad({"message": f"_meta.litbridge.{k} must be a non-empty string"})
    if "args" in spec and not (
        isinstance(spec["args"], list) and all(isinstance(a, str) for a in spec["args"])
    ):
        raise bad({"message": "_meta.litbridge.args must be a list of strings"})
    env = spec.get("env", {})
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise bad({"message": "_meta.litbridge.env must be an object of strings"})
    return spec


def _mcp_args(cli: str, servers: list[Any]) -> list[str]:
    """The client's MCP servers as Claude Code's `--mcp-config` (stdio, HTTP and SSE ones); other CLIs get none."""
    if not servers or cli.rsplit("/", 1)[-1] != "claude":
        return []
    config: dict[str, Any] = {}
    for s in servers:
        d = s.model_dump(by_alias=True, exclude_none=True)
        if "command" in d:
            config[d["name"]] = {
                "command": d["command"],
                "args": d.get("args", []),
                "env": {e["name"]: e["value"] for e in d.get("env", [])},
            }
        elif d.get("type") in ("http", "sse"):
            config[d["name"]] = {
                "type": d["type"],
                "url": d["url"],
                "headers": {h["name"]: h["value"] for h in d.get("headers", [])},
            }
    if not config:
        return []
    return ["--mcp-config", json.dumps({"mcpServers": config})]


async def serve_stdio(connect: Callable[[], Awaitable[Client]], defaults: CreateDefaults) -> None:
    """Serve ACP on stdin/stdout until stdin closes (raises DaemonNotRunning first when no daemon answers)."""
    bridge = Bridge(connect)
    await bridge.start()
    agent = LitbridgeAgent(bridge, defaults)
    try:
        # a subset of acp.interfaces.Agent: the SDK answers method-not-found for the methods it lacks
        await run_agent(cast(Agent, agent), use_unstable_protocol=True)
    finally:
        await agent.close()
        with contextlib.suppress(Exception):
            await bridge.close()
