"""`litbridge list`: the daemon's sessions as a table (or the raw `sessions` event with --json).

Only formats; the fields are whatever the daemon's `list` reply carries.
"""

from __future__ import annotations

import argparse

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


async def _main(args: argparse.Namespace) -> int:
    async with common.connect(args) as client:
        sessions = await client.list()
    if args.json:
        common.print_json({"event": "sessions", "sessions": sessions})
        return common.EXIT_OK
    if not sessions:
        print("no sessions (start one with `litbridge create NAME --cli ...`)")
        return common.EXIT_OK
    rows = [
        [common.shown(str(s.get(k))) if k == "name" else s.get(k) for k, _ in COLUMNS]
        for s in sorted(sessions, key=lambda s: str(s.get("name")))
    ]
    print(common.table(rows, [h for _, h in COLUMNS]))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "list", help="list the sessions", description="List the daemon's sessions as a table."
    )
    common.add_connection_args(p, json_help="print the `sessions` reply as JSON")
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
