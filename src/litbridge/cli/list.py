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


def _cell(session: dict[str, Any], column: str) -> Any:
    """One table cell; BRANCH is the worktree's branch (empty for a session outside a worktree)."""
    if column == "branch":
        wt = session.get("worktree")
        return common.shown(str(wt.get("branch"))) if isinstance(wt, dict) else ""
    value = session.get(column)
    return common.shown(str(value)) if column == "name" else value


async def _main(args: argparse.Namespace) -> int:
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
        "list", help="list the sessions", description="List the daemon's sessions as a table."
    )
    common.add_connection_args(p, json_help="print the `sessions` reply as JSON")
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
