"""`litbridge list`: the daemon's sessions as a table (or the raw `sessions` event with --json).

Only formats; the fields are whatever the daemon's `list` reply carries.
"""

from __future__ import annotations

import argparse
from typing import Any

from litbridge.cli import common

COLUMNS = (
    ("name", "SESSION"),
    ("state", "STATE"),
    ("cli", "CLI"),
    ("model", "MODEL"),
    ("pid", "PID"),
    ("turn_id", "TURN"),
    ("queued", "QUEUED"),
)
BRANCH = ("branch", "BRANCH")  # shown when a session runs in a git worktree
FLEET_COLUMNS = (
    ("daemon", "DAEMON"),
    ("host", "HOST"),
    ("name", "SESSION"),
    ("state", "STATE"),
    ("cli", "CLI"),
    ("available", "AVAILABLE"),
    ("question", "QUESTION"),
)


def _cell(session: dict[str, Any], column: str) -> Any:
    """One table cell; BRANCH is the worktree's branch (empty for a session outside a worktree)."""
    if column == "branch":
        wt = session.get("worktree")
        return common.shown(str(wt.get("branch"))) if isinstance(wt, dict) else ""
    value = session.get(column)
    return common.shown(str(value)) if column == "name" else value


def _fleet_cell(session: dict[str, Any], column: str) -> Any:
    value = session.get(column)
    if column == "available":
        return "yes" if value else "no (daemon gone)"
    if column == "question":
        return common.shown(str(value.get("text") or "?")) if isinstance(value, dict) else ""
    return common.shown(str(value)) if isinstance(value, str) else value


async def _fleet_main(args: argparse.Namespace) -> int:
    """Every session of the fleet, from its registry, with its daemon, host and whether it is available."""
    async with common.connect_fleet(args) as fleet:
        sessions = await fleet.list()
        daemons = await fleet.daemons() if not sessions else []
    if args.json:
        common.print_json({"event": "sessions", "sessions": sessions})
        return common.EXIT_OK
    if not sessions:
        live = sum(1 for d in daemons if d.get("available"))
        print(
            f"no sessions in fleet {args.fleet!r} ({live} live daemon(s); start one with "
            "`litbridge create NAME --cli ... --nats URL`)"
        )
        return common.EXIT_OK
    rows = [[_fleet_cell(s, k) for k, _ in FLEET_COLUMNS] for s in sessions]
    print(common.table(rows, [h for _, h in FLEET_COLUMNS]))
    return common.EXIT_OK


async def _main(args: argparse.Namespace) -> int:
    if common.fleet_config(args) is not None:
        return await _fleet_main(args)
    async with common.connect(args) as client:
        sessions = await client.list()
    if args.json:
        common.print_json({"event": "sessions", "sessions": sessions})
        return common.EXIT_OK
    if not sessions:
        print("no sessions (start one with `litbridge create NAME --cli ...`)")
        return common.EXIT_OK
    columns = COLUMNS + ((BRANCH,) if any(isinstance(s.get("worktree"), dict) for s in sessions) else ())
    rows = [[_cell(s, k) for k, _ in columns] for s in sorted(sessions, key=lambda s: str(s.get("name")))]
    print(common.table(rows, [h for _, h in columns]))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "list",
        help="list the sessions",
        description="List the daemon's sessions as a table; with --nats, every session of the fleet with its "
        "daemon, host and whether it is available (its daemon still renews its registry entry).",
    )
    common.add_connection_args(p, json_help="print the `sessions` reply as JSON")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
