"""`litbridge answer SESSION`: answer the CLI's open question (by digit, option label or text) without a chat.

A thin wrapper over the `answer` command, on the local daemon or (with --nats) on DAEMON/SESSION of a fleet.
"""

from __future__ import annotations

import argparse

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    async with common.connect_any(args) as (client, session):
        ev = await client.answer(
            session,
            question_id=args.question_id,
            digit=args.digit,
            option=args.option,
            text=args.text,
            channel_id=args.channel_id,
        )
    if args.json:
        common.print_json(ev)
    else:
        print(f"{common.shown(str(ev.get('session') or session))}: answered")
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "answer",
        help="answer a session's open question",
        description="Answer SESSION's open question (the `question` event) by option digit, option label or "
        "free text.",
    )
    common.add_session_arg(p, fleet=True)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--digit", metavar="N", help="the option's digit")
    how.add_argument("--option", metavar="LABEL", help="the option's label")
    how.add_argument("--text", metavar="TEXT", help="free text")
    p.add_argument(
        "--question", dest="question_id", metavar="ID", help="the question's id (default: the open one)"
    )
    common.add_connection_args(p, json_help="print the `answer_sent` reply as JSON")
    common.add_fleet_args(p)
    p.set_defaults(func=lambda args: common.run(lambda: _main(args)))
