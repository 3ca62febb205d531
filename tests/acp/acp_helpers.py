"""Driving `python -m litbridge acp` with the ACP SDK's own client side, for tests/acp.

`acp_agent` spawns the agent against a daemon's socket (the SDK's `spawn_agent_process`) and yields an
`Editor`: the `ClientSideConnection`, and a recording client that answers permission requests by a policy.
Every JSON-RPC message either way is checked by `check_message` against the SDK's schema models.

No JSON Schema file ships with the `agent-client-protocol` package (only the pydantic models generated from
it, `acp.schema`), so the check is: the message validates against the model for its method, and dumping the
model again gives back exactly the message (so no unknown field was silently dropped and no invalid value
salvaged into a default, which the SDK's lenient validators would otherwise allow).
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp import schema as S
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from pydantic import BaseModel, TypeAdapter

# method -> (params model, result model); None: a notification
METHODS: dict[str, tuple[Any, Any]] = {
    "initialize": (S.InitializeRequest, S.InitializeResponse),
    "authenticate": (S.AuthenticateRequest, S.AuthenticateResponse),
    "session/new": (S.NewSessionRequest, S.NewSessionResponse),
    "session/load": (S.LoadSessionRequest, S.LoadSessionResponse),
    "session/list": (S.ListSessionsRequest, S.ListSessionsResponse),
    "session/resume": (S.ResumeSessionRequest, S.ResumeSessionResponse),
    "session/close": (S.CloseSessionRequest, S.CloseSessionResponse),
    "session/prompt": (S.PromptRequest, S.PromptResponse),
    "session/cancel": (S.CancelNotification, None),
    "session/update": (S.SessionNotification, None),
    "session/request_permission": (S.RequestPermissionRequest, S.RequestPermissionResponse),
    "elicitation/create": (S.CreateElicitationRequest, S.CreateElicitationResponse),
}


class _Error(BaseModel):
    code: int
    message: str
    data: Any = None


def _same(model: Any, raw: Any) -> None:
    """`raw` validates against `model` and is exactly what the model dumps again."""
    adapter = TypeAdapter(model)
    obj = adapter.validate_python(raw)
    again = adapter.dump_python(obj, mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    assert again == raw, f"{getattr(model, '__name__', model)}: {raw!r} is not exactly the schema's {again!r}"


class MessageChecker:
    """Checks every JSON-RPC message of one connection (requests, results by the method of their request)."""

    def __init__(self) -> None:
        self.pending: dict[tuple[str, Any], str] = {}
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.errors: list[str] = []

    def __call__(self, ev: StreamEvent) -> None:
        msg = ev.message
        way = "out" if ev.direction == StreamDirection.OUTGOING else "in"
        self.messages.append((way, msg))
        try:
            self.check(way, msg)
        except Exception as exc:  # kept, and raised by the test's teardown (not lost in the SDK's task)
            self.errors.append(f"{way} {msg!r}: {exc}")

    def check(self, way: str, msg: dict[str, Any]) -> None:
        assert msg.get("jsonrpc") == "2.0", msg
        method = msg.get("method")
        if method is not None and method not in METHODS:  # a test's deliberately unknown method
            if "id" in msg:
                self.pending[(way, msg["id"])] = method
            return
        if method is not None:
            params_model, _ = METHODS[method]
            assert ("id" in msg) == (METHODS[method][1] is not None), msg
            _same(params_model, msg.get("params"))
            if "id" in msg:
                self.pending[(way, msg["id"])] = method
            return
        method = self.pending.pop(("in" if way == "out" else "out", msg["id"]))
        if "error" in msg or method not in METHODS:
            _same(_Error, msg["error"])
            assert "result" not in msg, msg
        else:
            _same(METHODS[method][1], msg["result"])

    def assert_clean(self) -> None:
        assert not self.errors, "\n".join(self.errors)
        assert self.messages, "no ACP message seen"


Policy = Callable[[list[S.PermissionOption]], str | Awaitable[str | None] | None]
"""Picks an option id for a permission request (or awaits one), or None to answer `cancelled`."""

Elicit = Callable[[S.ElicitationFormSessionMode], dict[str, Any] | None]
"""Fills in an elicitation form: the content to accept with, or None to decline."""


@dataclass
class Recorder:
    """The editor's side: keeps every session/update and permission request, answers by `policy`."""

    policy: Policy = lambda options: options[0].option_id
    elicit: Elicit | None = None
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[S.RequestPermissionRequest] = field(default_factory=list)
    forms: list[tuple[str, S.ElicitationFormSessionMode]] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: S.ToolCallUpdate, options: list[S.PermissionOption], **kw: Any
    ) -> S.RequestPermissionResponse:
        self.asked.append(
            S.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options)
        )
        choice = self.policy(options)
        if inspect.isawaitable(choice):
            choice = await choice
        if choice is None:
            return S.RequestPermissionResponse(outcome=S.DeniedOutcome(outcome="cancelled"))
        return S.RequestPermissionResponse(outcome=S.AllowedOutcome(outcome="selected", option_id=choice))

    async def create_elicitation(
        self, message: str, mode: S.ElicitationFormSessionMode, **kw: Any
    ) -> S.AcceptElicitationResponse | S.DeclineElicitationResponse:
        self.forms.append((message, mode))
        assert self.elicit is not None, "elicitation/create sent to a client that did not advertise it"
        content = self.elicit(mode)
        if content is None:
            return S.DeclineElicitationResponse(action="decline")
        return S.AcceptElicitationResponse(action="accept", content=content)

    def of(self, session_id: str, kind: str) -> list[Any]:
        return [u for sid, u in self.updates if sid == session_id and u.session_update == kind]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(session_id, kind))


@dataclass
class Editor:
    conn: ClientSideConnection
    rec: Recorder
    checker: MessageChecker
    proc: Any

    async def new(self, cli_meta: dict[str, Any] | None = None, cwd: str = "/tmp") -> str:
        meta = {"litbridge": cli_meta} if cli_meta else {}
        return (await self.conn.new_session(cwd=cwd, mcp_servers=[], **meta)).session_id

    async def prompt(self, session_id: str, text: str) -> S.PromptResponse:
        return await self.conn.prompt(
            session_id=session_id, prompt=[S.TextContentBlock(type="text", text=text)]
        )


def agent_argv(socket: str, *extra: str) -> list[str]:
    return ["-m", "litbridge", "acp", "--socket", socket, *extra]


@asynccontextmanager
async def acp_agent(
    socket: str, *extra: str, policy: Policy | None = None, elicit: Elicit | None = None
) -> AsyncIterator[Editor]:
    """`litbridge acp --socket SOCKET EXTRA...`, initialized; its stderr is shown when the test fails. With
    `elicit`, the editor advertises form elicitation and fills the forms in with it."""
    rec = Recorder(policy, elicit) if policy is not None else Recorder(elicit=elicit)
    checker = MessageChecker()
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with spawn_agent_process(
                rec,
                sys.executable,
                *agent_argv(socket, *extra),
                env=dict(os.environ),
                transport_kwargs={"stderr": errlog.fileno()},
                observers=[checker],
                use_unstable_protocol=True,
            ) as (conn, proc):
                caps = (
                    S.ClientCapabilities(
                        elicitation=S.ElicitationCapabilities(form=S.ElicitationFormCapabilities())
                    )
                    if elicit is not None
                    else None
                )
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=caps,
                    client_info=S.Implementation(name="tests", version="0"),
                )
                assert init.protocol_version == PROTOCOL_VERSION
                yield Editor(conn, rec, checker, proc)
            checker.assert_clean()
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("--- litbridge acp stderr:\n" + errlog.read()[-4000:])
            raise
