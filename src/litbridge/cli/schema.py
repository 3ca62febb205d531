"""`litbridge schema`: print the protocol's JSON Schema (draft 2020-12), or the docs tables with --markdown.

Generated from `litbridge.protocol.spec` by `litbridge.protocol.jsonschema`; needs no daemon.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from litbridge.cli import common
from litbridge.protocol import jsonschema
from litbridge.protocol.spec import COMMANDS, EVENTS


def _main(args: argparse.Namespace) -> int:
    if args.update_docs:
        path = Path(args.update_docs)
        try:
            old = path.read_text(encoding="utf-8")
            new = jsonschema.splice_docs(old)
        except (OSError, ValueError) as exc:
            common.eprint(f"litbridge: cannot update {path}: {exc}")
            return common.EXIT_ERROR
        if new != old:
            path.write_text(new, encoding="utf-8")
        print(f"{path}: {'updated' if new != old else 'already up to date'}")
        return common.EXIT_OK
    if args.markdown:
        sys.stdout.write(jsonschema.markdown_tables())
        return common.EXIT_OK
    if args.command_name:
        if args.command_name not in COMMANDS:
            common.eprint(f"litbridge: unknown command {args.command_name!r}; known: {', '.join(COMMANDS)}")
            return common.EXIT_ERROR
        schema = jsonschema.command_schema(args.command_name)
    elif args.event_name:
        if args.event_name not in EVENTS:
            common.eprint(f"litbridge: unknown event {args.event_name!r}; known: {', '.join(EVENTS)}")
            return common.EXIT_ERROR
        schema = jsonschema.event_schema(args.event_name)
    else:
        schema = jsonschema.protocol_schema()
    print(jsonschema.dumps(schema))
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "schema",
        help="print the protocol's JSON Schema",
        description="Print the JSON Schema (draft 2020-12) of every command and event. Needs no daemon.",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--command", dest="command_name", metavar="CMD", help="only the schema of command CMD")
    which.add_argument("--event", dest="event_name", metavar="EVENT", help="only the schema of event EVENT")
    which.add_argument(
        "--markdown", action="store_true", help="print the command/event tables of docs/protocol.md"
    )
    which.add_argument(
        "--update-docs",
        metavar="FILE",
        help="rewrite the generated tables in FILE (docs/protocol.md) from the spec",
    )
    common.add_connection_args(p, json_help="accepted for uniformity; the schema is always JSON")
    p.set_defaults(func=_main)
