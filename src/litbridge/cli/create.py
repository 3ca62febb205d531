"""`litbridge create SESSION`: start a CLI (Claude Code by default) under the daemon and wait until it is ready.

Maps flags to the `create` command's fields; what "ready" means (dialogs handled, prompt live) is the
daemon's and the driver's business.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

import orjson

from litbridge.cli import common
from litbridge.client import Event, EventStream

_PROGRESS: dict[str, Callable[[Event], str]] = {
    "dialog_dismissed": lambda ev: (
        f"· answered a start-up dialog: {ev.get('dialog')} ({' '.join(ev.get('keys') or [])})"
    ),
    "unknown_dialog": lambda ev: (
        f"· an unknown dialog is showing (see `litbridge attach`): {ev.get('dialog')}"
    ),
    "question": lambda ev: f"· the CLI asks: {ev.get('text')} (answer with `litbridge chat` or attach)",
}


async def _show_progress(stream: EventStream, json_mode: bool) -> None:
    """What happens while the CLI starts (dialogs answered...), on stderr."""
    async for ev in stream:
        if json_mode:
            common.print_json(ev, sys.stderr)
        else:
            common.eprint(_PROGRESS[str(ev.get("event"))](ev))


def _options(pairs: list[str]) -> dict[str, Any]:
    """`--opt K=V` driver options; V is JSON when it parses (true, 0.3, ["a"]), else a string."""
    out: dict[str, Any] = {}
    for key, value in common.parse_env(pairs).items():
        try:
            out[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key] = value
    return out


def _here() -> str | None:
    """The caller's working directory: where a CLI started from a shell expects to work (None, and so the
    daemon's $HOME, when it no longer exists)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _run(args: argparse.Namespace) -> int:
    try:
        env = common.parse_env(args.env or [])
        extra = _options(args.opt or [])
        args.labels = common.parse_env(args.label or [])
    except ValueError as exc:
        common.eprint(f"litbridge: {exc}")
        return common.EXIT_USAGE
    if getattr(args, "nats", None):  # a path on the daemon's machine: as given, or the daemon's $HOME
        cwd = args.cwd
    else:
        cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else _here()
    return common.run(lambda: _main(args, env, cwd, extra))


async def _fleet_create(
    args: argparse.Namespace, env: dict[str, str], cwd: str | None, extra: dict[str, Any]
) -> Event:
    """Create on `--on DAEMON` (or DAEMON/SESSION), else on the live daemon with the fewest sessions among
    those with every `--label`; progress events are not shown (they are on the fleet's stream)."""
    async with common.connect_fleet(args) as fleet:
        return await fleet.create(
            args.session,
            args.cli,
            on=args.on,
            labels=args.labels,
            args=args.args,
            working_dir=cwd,
            env=env or None,
            model=args.model,
            channel_id=args.channel_id,
            timeout=args.timeout,
            worktree=args.worktree,
            **({"worktree_allow_dirty": True} if args.allow_dirty else {}),
            **extra,
        )


async def _main(args: argparse.Namespace, env: dict[str, str], cwd: str | None, extra: dict[str, Any]) -> int:
    if common.fleet_config(args) is not None:
        return _show_ready(args, await _fleet_create(args, env, cwd, extra))
    elif args.on or args.label:
        common.eprint("litbridge: --on and --label place a session in a fleet: give --nats URL too")
        return common.EXIT_USAGE
    async with common.connect(args) as client:
        key = args.session if args.channel_id is None else f"{args.session}:{args.channel_id}"
        progress = client.events(key, kinds=set(_PROGRESS))
        shower = asyncio.create_task(_show_progress(progress, args.json))
        try:
            ready = await client.create(
                args.session,
                args.cli,
                args=args.args,
                working_dir=cwd,
                env=env or None,
                model=args.model,
                channel_id=args.channel_id,
                timeout=args.timeout,
                worktree=args.worktree,
                **({"worktree_allow_dirty": True} if args.allow_dirty else {}),
                **extra,
            )
        finally:
            progress.close()
            await shower
    return _show_ready(args, ready)


def _show_ready(args: argparse.Namespace, ready: Event) -> int:
    if args.json:
        common.print_json(ready)
        return common.EXIT_OK
    key = common.shown(str(ready.get("session") or args.session))
    if ready.get("daemon"):  # placed in a fleet: the address to use next (`send DAEMON/SESSION`)
        key = f"{common.shown(str(ready['daemon']))}/{key}"
    how = (
        "reused (already running)"
        if ready.get("reused")
        else "resumed"
        if ready.get("resumed")
        else "started"
    )
    model = ready.get("model")
    wt = ready.get("worktree")
    where = (
        f", in worktree {common.shown(str(wt.get('path')))} (branch {common.shown(str(wt.get('branch')))})"
        if isinstance(wt, dict)
        else ""
    )
    print(f"{key}: ready, {how}" + (f", model {model}" if model else "") + where)
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "create",
        help="start a CLI session and wait until it is ready",
        description="Start CLI (default: claude) as SESSION and wait for `ready` (startup dialogs handled, prompt "
        "live). Creating a key whose CLI is alive reuses it.",
    )
    common.add_session_arg(p, fleet=True)
    p.add_argument(
        "--cli",
        metavar="CLI",
        help="CLI name or executable: claude, codex, gemini, rift, or any program (default: claude)",
    )
    p.add_argument(
        "--arg",
        dest="args",
        action="append",
        metavar="A",
        help="an argument for the CLI (repeatable; write --arg=--flag for values that start with -)",
    )
    p.add_argument(
        "--cwd",
        metavar="DIR",
        help="working directory of the CLI (default: the current directory; `--cwd ~` for your home)",
    )
    p.add_argument(
        "--env", action="append", metavar="K=V", help="environment variable for the CLI (repeatable)"
    )
    p.add_argument(
        "--worktree",
        nargs="?",
        const=True,
        metavar="BRANCH",
        help="run the CLI in a new git worktree of the working directory's repository, on new branch BRANCH "
        "(default litbridge/SESSION), under <repo>/.litbridge/worktrees/SESSION; kill removes it when clean "
        "and keeps the branch (give it after SESSION, or as --worktree=BRANCH)",
    )
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="with --worktree: make it even when the main checkout has uncommitted changes or untracked files "
        "(the worktree starts from HEAD without them)",
    )
    p.add_argument(
        "--model",
        metavar="M",
        help="model: claude, gemini and rift get --model M, codex gets -m M; any other program gets nothing "
        "(M is only shown as its model)",
    )
    p.add_argument(
        "--opt",
        action="append",
        metavar="K=V",
        help="driver option (repeatable; V parsed as JSON when it can be), e.g. --opt preapprove=true "
        "for claude, --opt quiescence=0.5 for the generic driver",
    )
    p.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="give up after S seconds (default 600)"
    )
    common.add_connection_args(p, json_help="print the `ready` event as JSON")
    common.add_fleet_args(p, env=True)
    p.add_argument(
        "--on", metavar="DAEMON", help="with --nats: the daemon to start it on (default: placed, see --label)"
    )
    p.add_argument(
        "--label",
        action="append",
        metavar="K=V",
        help="with --nats: place it on the live daemon with the fewest sessions among those labelled K=V "
        "(repeatable)",
    )
    p.set_defaults(func=_run)
