"""`litbridge dump SESSION`: the session's 200x50 screen as text, with its state and bookkeeping.

Prints what the daemon's `dump` reply carries; it does not interpret the screen.
"""

from __future__ import annotations

import argparse

from litbridge.cli import common

_HEADER_FIELDS = (
    "state",
    "driver",
    "cli_version",
    "turn_id",
    "queued",
    "observing",
    "count",
    "transcript_path",
)


async def _main(args: argparse.Namespace) -> int:
    async with common.connect(args) as client:
        dump = await client.dump(args.session, channel_id=args.channel_id)
    if args.json:
        common.print_json(dump)
        return common.EXIT_OK
    rows = str(dump.get("capture") or "").split("\n")
    if not args.full:
        rows = [r.rstrip() for r in rows]
        while rows and not rows[-1]:
            rows.pop()
    info = [f"session {common.shown(str(dump.get('session') or args.session))}"]
    info += [f"{k} {dump[k]}" for k in _HEADER_FIELDS if dump.get(k) not in (None, "")]
    cursor = dump.get("cursor")
    if isinstance(cursor, dict):
        info.append(
            f"cursor {cursor.get('x')},{cursor.get('y')}" + (" hidden" if cursor.get("hidden") else "")
        )
    elif isinstance(cursor, list | tuple):
        info.append("cursor " + ",".join(str(c) for c in cursor))
    print("  ".join(info))
    width = max((len(r) for r in rows), default=0)
    print("─" * max(min(width, 200), 20))
    print("\n".join(rows))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "dump",
        help="print a session's screen and state",
        description="Print SESSION's screen (50 rows) and state.",
    )
    common.add_session_arg(p)
    p.add_argument("--full", action="store_true", help="keep trailing blanks and empty rows (all 50 rows)")
    common.add_connection_args(p, json_help="print the `dump` reply as JSON")
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
