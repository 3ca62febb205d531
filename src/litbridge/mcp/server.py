"""The MCP server of `litbridge mcp`: tools and resources over one connection to a running daemon.

Built on the official `mcp` SDK (`MCPServer`, stdio transport). Tool calls run concurrently (the SDK serves
each request in its own task), so `interrupt` acts while a `send` is still waiting. Every daemon error becomes
an MCP tool error with the daemon's message; a lost daemon is reconnected on the next call. Knows nothing of
the daemon's internals: it is a `litbridge.client` client like the CLI.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import Resource as MCPResource
from pydantic import Field

from litbridge import __version__
from litbridge.cli.common import error_text
from litbridge.cli.send import answer_fields
from litbridge.client import Client, ConnectionLost, DaemonNotRunning, Event, LitbridgeError
from litbridge.mcp import tracker
from litbridge.mcp.tracker import brief

T = TypeVar("T")

DEFAULT_TIMEOUT = 300.0
"""Seconds `send` / `wait` wait for the turn's end by default before answering `timeout`."""

TRANSCRIPT_URI = "litbridge://session/{name}/transcript"

INSTRUCTIONS = (
    "Drives the interactive CLI sessions (Claude Code, Codex, Gemini, rift, shells...) of a litbridge daemon. "
    "`send` types a prompt into a session and waits for the turn's end; if the CLI asks a question meanwhile, "
    "`send` returns it (status `question`): answer it with `answer`, then call `wait` for the rest of the turn."
)


class Bridge(tracker.Bridge):
    """`tracker.Bridge` whose calls turn daemon and connection errors into MCP tool errors."""

    async def call(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run `fn` with the client; daemon and connection errors become MCP tool errors."""
        try:
            client = await self.client()
            return await fn(client)
        except DaemonNotRunning as exc:
            raise ToolError(exc.message) from None
        except ConnectionLost as exc:
            self.tracker.failure = self.tracker.failure or exc  # the next call connects afresh
            raise ToolError(f"{exc.message} (the next call reconnects)") from None
        except LitbridgeError as exc:
            raise ToolError(error_text(exc)) from None


def _progress(ctx: Context) -> Callable[[Event], Awaitable[None]]:
    """An MCP progress notification per meaningful event of the turn (streamed text at most twice a second)."""
    count = 0
    last_text = 0.0

    async def report(ev: Event) -> None:
        nonlocal count, last_text
        kind = ev.get("event")
        message: str | None = None
        if kind == "state":
            message = f"state {ev.get('from')} -> {ev.get('to')}"
        elif kind == "tool_use":
            message = f"tool {ev.get('name')}: {brief(ev.get('input'), 120)}"
        elif kind == "tool_result":
            message = f"tool result: {brief(ev.get('content'), 120)}"
        elif kind == "question":
            message = f"question: {brief(ev.get('text'), 120)}"
        elif kind in ("replace", "thinking") and time.monotonic() - last_text >= 0.5:
            last_text = time.monotonic()
            lines = str(ev.get("text") or "").strip().splitlines()
            message = f"{'responding' if kind == 'replace' else 'thinking'}: {brief(lines[-1] if lines else '', 120)}"
        if message is None:
            return
        count += 1
        with contextlib.suppress(Exception):  # a client that went away must not fail the turn's wait
            await ctx.report_progress(count, None, message)

    return report


SessionArg = Annotated[str, Field(description="Session name (the daemon's key: NAME or NAME:CHANNEL).")]
TimeoutArg = Annotated[
    float,
    Field(
        ge=0,
        description="Seconds to wait for the turn's end; on expiry the result is status `timeout` and the turn "
        "keeps running (call `wait`).",
    ),
]


def build_server(bridge: Bridge) -> MCPServer[Any]:
    """The MCP server with litbridge's tools and transcript resources, bound to `bridge`."""
    server = _Server(bridge)
    tracker = lambda: bridge.tracker  # noqa: E731  (replaced on reconnect)

    @server.tool(
        description="List the daemon's sessions: name, cli, state, working directory, the running turn and "
        "the open question (if any)."
    )
    async def list_sessions() -> dict[str, Any]:
        sessions = await bridge.call(lambda c: c.list())
        out = []
        for s in sorted(sessions, key=lambda s: str(s.get("name"))):
            name = str(s.get("name"))
            q = tracker().open_question(name)
            out.append(
                {
                    "name": name,
                    "cli": s.get("cli"),
                    "state": s.get("state"),
                    "cwd": s.get("working_dir"),
                    "alive": s.get("alive", True),
                    "turn_id": s.get("turn_id"),
                    "queued": s.get("queued", 0),
                    "pending_question": _question_brief(q) if q is not None else None,
                }
            )
        return {"sessions": out}

    @server.tool(
        description="Start a CLI session in the daemon (or reuse the live one of that name); returns once its "
        "prompt is live."
    )
    async def create_session(
        name: SessionArg,
        cli: Annotated[
            str,
            Field(
                description="claude, codex, gemini, rift, or any program (bash, python3...) run generically."
            ),
        ] = "claude",
        cwd: Annotated[
            str | None, Field(description="Working directory (default: the daemon's $HOME).")
        ] = None,
        args: Annotated[
            list[str] | None, Field(description="Extra command-line arguments for the CLI.")
        ] = None,
        env: Annotated[dict[str, str] | None, Field(description="Extra environment variables.")] = None,
        model: Annotated[str | None, Field(description="Model name, for CLIs that take one.")] = None,
        worktree: Annotated[
            bool | str | None,
            Field(description="Run in a new git worktree of cwd: true, or the branch name to use."),
        ] = None,
        worktree_allow_dirty: Annotated[
            bool,
            Field(
                description="Make the worktree even when cwd's checkout has uncommitted changes or untracked "
                "files (they are not in the worktree, which starts from HEAD); else that is an error."
            ),
        ] = False,
        timeout: Annotated[float, Field(gt=0, description="Seconds to wait for the prompt.")] = 600.0,
    ) -> dict[str, Any]:
        # passed through as the create command's `worktree` fields, only when asked for
        extra: dict[str, Any] = {"worktree": worktree} if worktree not in (None, False) else {}
        if worktree_allow_dirty:
            extra["worktree_allow_dirty"] = True
        ready = await bridge.call(
            lambda c: c.create(
                name, cli, args=args, working_dir=cwd, env=env, model=model, timeout=timeout, **extra
            )
        )
        keys = ("session", "state", "model", "resumed", "reused", "working_dir", "worktree", "branch")
        return {k: ready[k] for k in keys if k in ready}

    @server.tool(
        description="Send a prompt to a session as one turn and wait for its end. Returns status `complete` "
        "(with `content`), `interrupted`, `turn_error`, `timeout` (still running: call `wait`) or `question` "
        "(the CLI asks something: `answer` it, then call `wait` with the turn_id). Progress notifications "
        "report the turn's state, tool calls and text while it runs."
    )
    async def send(
        session: SessionArg,
        prompt: Annotated[str, Field(description="The message to type into the CLI.")],
        ctx: Context,
        timeout: TimeoutArg = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        async def go(c: Client) -> dict[str, Any]:
            since = bridge.tracker.position(session)  # progress from the turn's first event on
            accepted = await c.request("send", {"session": session, "content": prompt})
            key = str(accepted.get("session") or session)
            turn_id = str(accepted.get("turn_id"))
            bridge.tracker.note_prompt(key, turn_id, prompt)
            return await bridge.tracker.wait_turn(key, turn_id, timeout, _progress(ctx), since)

        return await bridge.call(go)

    @server.tool(
        description="Keep waiting for a turn's end (after `send` returned `question` or `timeout`). Without "
        "turn_id: the session's running turn, else its latest one. Returns like `send`; a question already "
        "returned is not returned again."
    )
    async def wait(
        session: SessionArg,
        ctx: Context,
        turn_id: Annotated[str | None, Field(description="The turn, as `send` returned it.")] = None,
        timeout: TimeoutArg = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        async def go(c: Client) -> dict[str, Any]:
            dump = await c.dump(session)  # session_not_found first, if that is the problem
            log = bridge.tracker.sessions.get(session)
            latest = next(reversed(log.turns), None) if log is not None else None
            tid = turn_id or (log.running if log is not None else None) or dump.get("turn_id") or latest
            if tid is None:
                raise ToolError(f"{session}: no turn seen yet (nothing to wait for)")
            if turn_id is not None and (log is None or turn_id not in log.turns):
                raise ToolError(f"{session}: unknown turn {turn_id!r} (not seen by this server)")
            return await bridge.tracker.wait_turn(session, str(tid), timeout, _progress(ctx))

        return await bridge.call(go)

    @server.tool(
        description="Answer a session's open question: an option's digit or label, or free text. Without "
        "question_id: the session's open question."
    )
    async def answer(
        session: SessionArg,
        choice: Annotated[
            str, Field(min_length=1, description='An option\'s digit ("1") or label, or text.')
        ],
        question_id: Annotated[str | None, Field(description="The question, as `send` returned it.")] = None,
    ) -> dict[str, Any]:
        async def go(c: Client) -> dict[str, Any]:
            q = bridge.tracker.open_question(session, question_id)
            if q is None and question_id is None:
                await c.dump(session)  # session_not_found first, if that is the problem
                raise ToolError(f"{session}: no open question to answer")
            fields = answer_fields(q or {"options": []}, choice) or {"text": choice}
            qid = question_id or (q or {}).get("question_id")
            sent = await c.answer(session, question_id=qid, **fields)
            return {
                "session": session,
                "question_id": sent.get("question_id") or qid,
                "digit": sent.get("digit"),
            }

        return await bridge.call(go)

    @server.tool(
        description="The session's screen as text (its terminal, as a person would see it) and state."
    )
    async def screen(session: SessionArg) -> dict[str, Any]:
        dump = await bridge.call(lambda c: c.dump(session))
        rows = [r.rstrip() for r in str(dump.get("capture") or "").split("\n")]
        while rows and not rows[-1]:
            rows.pop()
        return {
            "session": session,
            "state": dump.get("state"),
            "turn_id": dump.get("turn_id"),
            "screen": "\n".join(rows),
        }

    @server.tool(description="Interrupt the session's running turn (it ends with status `interrupted`).")
    async def interrupt(session: SessionArg) -> dict[str, Any]:
        reply = await bridge.call(lambda c: c.interrupt(session))
        return {"session": session, "turn_id": reply.get("turn_id"), "status": reply.get("event")}

    @server.tool(
        description="Kill the session's CLI and its process group. A session in a git worktree: the worktree "
        "is removed when it is clean, else kept (`worktree.removed`, `worktree.reason`); its branch stays."
    )
    async def kill(session: SessionArg) -> dict[str, Any]:
        reply = await bridge.call(lambda c: c.kill(session))
        out = {"session": session, "killed": True, "exit_code": reply.get("exit_code")}
        if reply.get("worktree") is not None:
            out["worktree"] = reply["worktree"]
        return out

    @server.resource(
        TRANSCRIPT_URI,
        name="transcript",
        description="A session's turns so far (prompts sent through this server, tool calls, final texts).",
        mime_type="text/markdown",
    )
    async def transcript(name: str) -> str:
        return bridge.tracker.transcript(name)  # the SDK has percent-decoded it

    return server


def _question_brief(q: Event) -> dict[str, Any]:
    return {
        "question_id": q.get("question_id"),
        "kind": q.get("kind"),
        "text": q.get("text"),
        "options": [{"digit": str(o.get("digit")), "label": o.get("label")} for o in q.get("options") or []],
    }


class _Server(MCPServer[Any]):
    """MCPServer whose resource list is one transcript per live session of the daemon."""

    def __init__(self, bridge: Bridge) -> None:
        super().__init__("litbridge", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self._bridge = bridge

    async def list_resources(self) -> list[MCPResource]:
        try:
            sessions = await self._bridge.call(lambda c: c.list())
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return [
            MCPResource(
                uri=TRANSCRIPT_URI.format(name=quote(str(s.get("name")), safe="")),
                name=f"transcript of {s.get('name')}",
                description=f"{s.get('cli')} session {s.get('name')}: its turns so far",
                mime_type="text/markdown",
            )
            for s in sessions
        ] + await super().list_resources()


@contextlib.asynccontextmanager
async def bridged(connect: Callable[[], Any]) -> AsyncIterator[Bridge]:
    """A started `Bridge` (raises DaemonNotRunning when no daemon answers), closed on exit."""
    bridge = Bridge(connect)
    await bridge.start()
    try:
        yield bridge
    finally:
        await bridge.close()


async def serve_stdio(connect: Callable[[], Any]) -> None:
    """Serve MCP on stdin/stdout until stdin closes."""
    async with bridged(connect) as bridge:
        await build_server(bridge).run_stdio_async()
