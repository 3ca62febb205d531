"""`litbridge kill SESSION`: stop a session's CLI and its process group (optionally keeping a resume point).

A thin wrapper over the `kill` command.
"""

from __future__ import annotations

import argparse

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    async with common.connect_any(args) as (client, session):
        ev = await client.kill(session, store_resume=args.store_resume, channel_id=args.channel_id)
    if args.json:
        common.print_json(ev)
        return common.EXIT_OK
    note = ""
    if args.store_resume:
        stored = ev.get("resume_stored") is not False  # a daemon before the field: assume it did
        note = (
            "; the next create resumes the conversation"
            if stored
            else f"; not resumable: {ev.get('resume_error')}"
        )
    wt = ev.get("worktree")
    if isinstance(wt, dict):
        path, branch = common.shown(str(wt.get("path"))), common.shown(str(wt.get("branch")))
        note += (
            f"; worktree {path} removed (branch {branch} kept)"
            if wt.get("removed")
            else f"; worktree {path} kept: {wt.get('reason')} (branch {branch})"
        )
    key = common.shown(str(ev.get("session") or args.session))
    print(f"{key}: killed (CLI {common.describe_exit(ev.get('exit_code'))}){note}")
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "kill", help="kill a session", description="Kill SESSION's CLI and its process group."
    )
    common.add_session_arg(p, fleet=True)
    p.add_argument(
        "--store-resume", action="store_true", help="remember the conversation so the next create resumes it"
    )
    common.add_connection_args(p, json_help="print the `killed` reply as JSON")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
