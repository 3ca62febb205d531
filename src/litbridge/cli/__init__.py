"""The `litbridge` command: argument parsing and dispatch to one module per subcommand.

Each subcommand lives in `litbridge/cli/<name>.py` and exposes `add_parser(subparsers)`, which registers
its parser and sets `func` (returning an exit code). The client side uses the wire only.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from litbridge import __version__

# Subcommand modules, in the order `--help` lists them. A module that is missing is simply skipped,
# so the command keeps working while subcommands are added.
SUBCOMMANDS = (
    "serve",
    "create",
    "send",
    "chat",
    "list",
    "dump",
    "kill",
    "answer",
    "interrupt",
    "events",
    "attach",
    "replay",
    "explain",
    "drivers",
    "schema",
    "service",
    "completion",
    "web",
    "mcp",
    "acp",
)


# Fleet options also accepted before the subcommand (`litbridge --nats URL list`), passed down to it.
GLOBAL_FLEET = (
    ("--nats", "URL", "join or address a fleet through these NATS server(s) (subcommands that take --nats)"),
    ("--fleet", "NAME", "fleet name"),
    ("--nats-creds", "FILE", "NATS credentials file"),
    ("--nats-token", "TOKEN", "NATS auth token"),
    ("--nats-tls-ca", "FILE", "CA bundle to verify the NATS server"),
    ("--nats-tls-cert", "FILE", "client certificate"),
    ("--nats-tls-key", "FILE", "client certificate's key"),
)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litbridge",
        description="Drive interactive AI coding CLIs (Claude Code, Codex CLI, Gemini CLI, GitHub Copilot CLI, "
        "opencode, Qwen Code, Pi, Kimi Code, rift; any other TUI or REPL through a generic driver) from "
        "applications over a JSON-lines socket.",
    )
    parser.add_argument("--version", action="version", version=f"litbridge {__version__}")
    fleet = parser.add_argument_group("fleet (NATS): also accepted here, before the subcommand")
    for flag, metavar, help in GLOBAL_FLEET:
        fleet.add_argument(flag, dest=f"global_{_dest(flag)}", metavar=metavar, help=help)
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


def _subparser(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    """The parser of subcommand `name` (the top-level one if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    return parser


def _pass_down(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Give the subcommand the fleet options written before it (its own, after it, win)."""
    given = {}
    for flag, _metavar, _help in GLOBAL_FLEET:
        value = getattr(args, f"global_{_dest(flag)}")
        delattr(args, f"global_{_dest(flag)}")
        if value is not None:
            given[flag] = value
    if not given or args.command is None:
        return
    sub = _subparser(parser, args.command)
    if not hasattr(args, "nats"):
        sub.error(f"{', '.join(given)}: the {args.command} subcommand does not take fleet options")
    defaults = {_dest(flag): sub.get_default(_dest(flag)) for flag in given}
    for flag, value in given.items():
        if getattr(args, _dest(flag), None) == defaults[_dest(flag)]:
            setattr(args, _dest(flag), value)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions (`litbridge completion SHELL`)
        import argcomplete

        argcomplete.autocomplete(parser)  # answers and exits
    args, extra = parser.parse_known_args(argv)
    if extra:  # a bad flag after a subcommand: that subcommand's usage, not the top-level one
        _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    _pass_down(parser, args)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # stdout closed by its reader (`litbridge schema | head`)
        from litbridge.cli.common import closed_stdout

        return closed_stdout()
