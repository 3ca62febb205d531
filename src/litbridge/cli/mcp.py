"""`litbridge mcp`: serve the daemon's sessions to an MCP client (Claude Code, an IDE...) over stdio.

Only parses options and checks that a daemon answers before speaking MCP; the server is litbridge.mcp.server
(which needs the optional `mcp` SDK: `pip install 'litbridge[mcp]' (from a checkout: pip install '.[mcp]')`).
"""

from __future__ import annotations

import argparse

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    try:
        from litbridge.mcp.server import serve_stdio
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith(("mcp", "pydantic")):
            raise
        common.eprint(
            "litbridge mcp: needs the MCP SDK: pip install 'litbridge[mcp]' (from a checkout: pip install '.[mcp]')"
        )
        return common.EXIT_ERROR
    await serve_stdio(lambda: common.connect(args, reconnect_timeout=5.0))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "mcp",
        help="serve the sessions to an MCP client (stdio)",
        description="Speak MCP on stdin/stdout as a client of the running daemon: tools to list, create, "
        "drive (send, wait, answer, interrupt, kill) and look at (screen) sessions, and a transcript resource "
        "per session. Exits when stdin closes; with no daemon running, says so on stderr and exits 1. "
        "See docs/mcp.md.",
    )
    common.add_connection_args(p, json=False)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
