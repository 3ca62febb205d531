"""Driving `python -m litbridge mcp` with the MCP SDK's own stdio client, for tests/mcp.

`mcp_session` spawns the server against a daemon's socket and yields an initialized `ClientSession`; the
server's stderr is kept in a file so a failing test can show it. `tool` calls a tool and returns its
structured result (failing on a tool error); `tool_error` expects one and returns its message.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client


def server_argv(socket: str) -> list[str]:
    return ["-m", "litbridge", "mcp", "--socket", socket]


@asynccontextmanager
async def mcp_session(socket: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=server_argv(socket), env={**os.environ, **(env or {})}
    )
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                yield s
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("--- litbridge mcp stderr:\n" + errlog.read()[-4000:])
            raise


async def tool(s: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    res = await s.call_tool(name, args or {}, **kw)
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert not res.is_error, f"{name}({args}) failed: {text}"
    assert isinstance(res.structured_content, dict), res
    return res.structured_content


async def tool_error(s: ClientSession, name: str, args: dict[str, Any] | None = None) -> str:
    res = await s.call_tool(name, args or {})
    text = " ".join(getattr(c, "text", "") for c in res.content)
    assert res.is_error, f"{name}({args}) should have failed, got {res.structured_content or text}"
    return text
