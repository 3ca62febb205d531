"""`litbridge interrupt SESSION`: interrupt the running turn (it then ends with `interrupted`).

A thin wrapper over the `interrupt` command, on the local daemon or (with --nats) on DAEMON/SESSION of a fleet.
"""

from __future__ import annotations

import argparse

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    async with common.connect_any(args) as (client, session):
        ev = await client.interrupt(session, channel_id=args.channel_id)
    if args.json:
        common.print_json(ev)
    else:
        print(f"{common.shown(str(ev.get('session') or session))}: interrupt sent")
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "interrupt",
        help="interrupt a session's running turn",
        description="Interrupt SESSION's running turn.",
    )
    common.add_session_arg(p, fleet=True)
    common.add_connection_args(p, json_help="print the reply as JSON")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
