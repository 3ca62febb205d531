"""`litbridge interrupt SESSION`: interrupt the running turn (it then ends with `interrupted`).

A thin wrapper over the `interrupt` command, on the local daemon or (with --nats) on DAEMON/SESSION of a fleet.
"""

from __future__ import annotations

import argparse

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    return await common.session_reply(
        args, lambda client, session: client.interrupt(session, channel_id=args.channel_id), "interrupt sent"
    )


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common.add_session_command(
        subparsers,
        "interrupt",
        _main,
        help="interrupt a session's running turn",
        description="Interrupt SESSION's running turn.",
        json_help="print the reply as JSON",
    )
