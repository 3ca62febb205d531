"""The `litbridge` command: argument parsing and dispatch to one module per subcommand.

Each subcommand lives in `litbridge/cli/<name>.py` and exposes `add_parser(subparsers)`, which registers
its parser and sets `func` (returning an exit code). The client side uses the wire only.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from litbridge import __version__

# Subcommand modules, in the order `--help` lists them. A module that is missing is simply skipped,
# so the command keeps working while subcommands are added.
SUBCOMMANDS = ("serve", "create", "send", "chat", "list", "dump", "kill", "attach", "replay", "schema")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litbridge",
        description="Drive interactive AI coding CLIs (Claude Code, rift, any TUI) over a JSON-lines socket.",
    )
    parser.add_argument("--version", action="version", version=f"litbridge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            mod = importlib.import_module(f"litbridge.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"litbridge.cli.{name}":
                raise
            continue
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
