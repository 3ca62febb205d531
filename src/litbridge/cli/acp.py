"""`litbridge acp`: speak the Agent Client Protocol on stdin/stdout, as a client of the running daemon.

Parses options, checks that a daemon answers (or starts one with --spawn-daemon) and hands over to
litbridge.acp.agent (which needs the optional SDK: `pip install 'litbridge[acp]'`).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys

from litbridge.cli import common
from litbridge.client import DaemonNotRunning

SPAWN_TIMEOUT = 30.0
"""Seconds --spawn-daemon waits for the new daemon to listen."""


def _start_serve(argv: list[str]) -> None:
    """`litbridge serve` in a session of its own, its output discarded: it outlives this process."""
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def _spawn_daemon(args: argparse.Namespace) -> None:
    """Start `litbridge serve` (detached: it outlives this process) unless a daemon answers already."""
    try:
        client = await common.connect(args, reconnect=False)
    except DaemonNotRunning:
        pass
    else:
        await client.close()
        return
    argv = [sys.executable, "-m", "litbridge", "serve"]
    if args.socket:
        argv += ["--socket", args.socket]
    if args.port is not None:
        argv += ["--port", str(args.port)]
    await asyncio.to_thread(_start_serve, argv)
    common.eprint("litbridge acp: started a daemon (`litbridge serve`)")
    deadline = asyncio.get_running_loop().time() + SPAWN_TIMEOUT
    while True:
        try:
            client = await common.connect(args, reconnect=False)
        except DaemonNotRunning:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)
        else:
            await client.close()
            return


async def _main(args: argparse.Namespace, defaults: object) -> int:
    try:
        from litbridge.acp.agent import serve_stdio
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith(("acp", "pydantic")):
            raise
        common.eprint(
            "litbridge acp: needs the ACP SDK: pip install 'litbridge[acp]' (from a checkout: pip install '.[acp]')"
        )
        return common.EXIT_ERROR
    if args.spawn_daemon:
        await _spawn_daemon(args)
    await serve_stdio(lambda: common.connect(args, reconnect_timeout=5.0), defaults)  # type: ignore[arg-type]
    return common.EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from litbridge.cli.create import _options

    try:
        env = common.parse_env(args.env or [])
        options = _options(args.opt or [])
    except ValueError as exc:
        common.eprint(f"litbridge: {exc}")
        return common.EXIT_USAGE
    try:
        from litbridge.acp.agent import CreateDefaults
    except ModuleNotFoundError:
        defaults: object = None  # _main says what is missing
    else:
        defaults = CreateDefaults(
            cli=args.cli,
            args=args.args,
            env=env or None,
            model=args.model,
            options=options,
            timeout=args.timeout,
        )
    return common.run(lambda: _main(args, defaults))


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "acp",
        help="be an Agent Client Protocol agent for an editor (stdio)",
        description="Speak the Agent Client Protocol on stdin/stdout as a client of the running daemon: "
        "each ACP session is a daemon session (session/new creates one with the options below, session/load "
        "replays one's buffered history), prompts are turns, the CLI's questions are permission requests. "
        "Exits when stdin closes; with no daemon running, says so on stderr and exits 1 (or starts one with "
        "--spawn-daemon). See docs/acp.md.",
    )
    p.add_argument(
        "--cli",
        metavar="CLI",
        help="what session/new starts: claude, codex, gemini, rift, or any program (default: the daemon's, "
        "claude); a client's _meta.litbridge.cli overrides it",
    )
    p.add_argument(
        "--arg",
        dest="args",
        action="append",
        metavar="A",
        help="an argument for the CLI (repeatable; write --arg=--flag for values that start with -)",
    )
    p.add_argument(
        "--env", action="append", metavar="K=V", help="environment variable for the CLI (repeatable)"
    )
    p.add_argument("--model", metavar="M", help="model, for CLIs that take one")
    p.add_argument(
        "--opt",
        action="append",
        metavar="K=V",
        help="driver option (repeatable; V parsed as JSON when it can be)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="session/new gives up after S seconds (default 600)",
    )
    p.add_argument(
        "--spawn-daemon",
        action="store_true",
        help="start `litbridge serve` (on --socket / --port) when no daemon answers; it keeps running after",
    )
    common.add_connection_args(p, json=False)
    p.set_defaults(func=_run)
