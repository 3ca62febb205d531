"""`litbridge answer SESSION`: answer the CLI's open question (by digit, option label or text) without a chat.

A thin wrapper over the `answer` command, on the local daemon or (with --nats) on DAEMON/SESSION of a fleet.
"""

from __future__ import annotations

import argparse
from typing import Any

from litbridge.cli import common


async def _main(args: argparse.Namespace) -> int:
    def answer(client: Any, session: str) -> Any:
        return client.answer(
            session,
            question_id=args.question_id,
            digit=args.digit,
            option=args.option,
            text=args.text,
            channel_id=args.channel_id,
        )

    return await common.session_reply(args, answer, "answered")


def _arguments(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--digit", metavar="N", help="the option's digit")
    how.add_argument("--option", metavar="LABEL", help="the option's label")
    how.add_argument("--text", metavar="TEXT", help="free text")
    p.add_argument(
        "--question", dest="question_id", metavar="ID", help="the question's id (default: the open one)"
    )


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common.add_session_command(
        subparsers,
        "answer",
        _main,
        help="answer a session's open question",
        description="Answer SESSION's open question (the `question` event) by option digit, option label or "
        "free text.",
        json_help="print the `answer_sent` reply as JSON",
        arguments=_arguments,
    )
