"""`litbridge create SESSION`: start a CLI (Claude Code by default) under the daemon and wait until it is ready.

Maps flags to the `create` command's fields; what "ready" means (dialogs handled, prompt live) is the
daemon's and the driver's business.
"""

from __future__ import annotations

import argparse
import os

from litbridge.cli import common


def _run(args: argparse.Namespace) -> int:
    try:
        env = common.parse_env(args.env or [])
    except ValueError as exc:
        common.eprint(f"litbridge: {exc}")
        return common.EXIT_USAGE
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else None
    return common.run(lambda: _main(args, env, cwd))


async def _main(args: argparse.Namespace, env: dict[str, str], cwd: str | None) -> int:
    async with common.connect(args) as client:
        ready = await client.create(
            args.session,
            args.cli,
            args=args.args,
            working_dir=cwd,
            env=env or None,
            model=args.model,
            channel_id=args.channel_id,
            timeout=args.timeout,
        )
    if args.json:
        common.print_json(ready)
        return common.EXIT_OK
    key = ready.get("session") or args.session
    how = "reused (already running)" if ready.get("reused") else "resumed" if ready.get("resumed") else "started"
    model = ready.get("model")
    print(f"{key}: ready, {how}" + (f", model {model}" if model else ""))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "create",
        help="start a CLI session and wait until it is ready",
        description="Start CLI (default: claude) as SESSION and wait for `ready` (startup dialogs handled, prompt "
        "live). Creating a key whose CLI is alive reuses it.",
    )
    common.add_session_arg(p)
    p.add_argument("--cli", metavar="CLI", help="CLI name or executable: claude, rift, or any program (default: claude)")
    p.add_argument(
        "--arg", dest="args", action="append", metavar="A", help="an argument for the CLI (repeatable; write --arg=--flag for values that start with -)"
    )
    p.add_argument("--cwd", metavar="DIR", help="working directory of the CLI (default: the daemon's $HOME)")
    p.add_argument("--env", action="append", metavar="K=V", help="environment variable for the CLI (repeatable)")
    p.add_argument("--model", metavar="M", help="model, passed to the CLI as --model M")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="give up after S seconds (default 600)")
    common.add_connection_args(p, json_help="print the `ready` event as JSON")
    p.set_defaults(func=_run)
