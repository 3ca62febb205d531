"""What every client subcommand shares: the connection options, error-to-exit-code mapping, output helpers.

Subcommands talk to the daemon through `litbridge.client` only. This module owns the friendly "no daemon"
message and the exit codes (0 ok, 1 error, 2 usage, 3 turn_error, 4 interrupted, 5 untrusted daemon,
130 Ctrl-C); it does not know any command's semantics.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TextIO

import orjson

from litbridge.client import TOKEN_ENV, Client, DaemonNotRunning, LitbridgeError, UntrustedDaemon, find_token
from litbridge.client.client import _Connecting
from litbridge.protocol.names import shown

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TURN_ERROR = 3
EXIT_INTERRUPTED = 4
EXIT_UNTRUSTED = 5  # what listens on the TCP port did not prove it is the daemon (nothing secret was sent)
EXIT_CTRL_C = 130


SOCKET_HELP = "daemon control socket (default: $LITBRIDGE_SOCKET, else the daemon's default path)"


def add_socket_arg(parser: Any, help: str = SOCKET_HELP) -> None:
    """`--socket PATH`, defaulting to $LITBRIDGE_SOCKET: the same on `serve`, `web` and every client subcommand."""
    parser.add_argument(
        "--socket", metavar="PATH", default=os.environ.get("LITBRIDGE_SOCKET") or None, help=help
    )


def add_connection_args(
    parser: argparse.ArgumentParser, *, json_help: str | None = None, json: bool = True
) -> None:
    """--socket / --port / --token-file / --token / --json, the same on every client subcommand (`json=False`: no --json, for
    `mcp`, whose output is the MCP protocol itself)."""
    g = parser.add_argument_group("connection")
    add_socket_arg(g)
    g.add_argument(
        "--port", type=int, metavar="N", help="connect over TCP 127.0.0.1:N instead of a Unix socket"
    )
    g.add_argument(
        "--token-file",
        metavar="FILE",
        help=f"read the TCP token from FILE (default: ${TOKEN_ENV}, else the daemon's token file)",
    )
    g.add_argument(
        "--token",
        metavar="TOKEN",
        action=_TokenOnArgv,
        help="the TCP token itself: other users can read it in ps / /proc; prefer --token-file or "
        f"${TOKEN_ENV}",
    )
    if json:
        parser.add_argument(
            "--json",
            action="store_true",
            help=json_help or "print the raw events as JSON lines instead of text",
        )


TOKEN_ON_ARGV_WARNING = (
    "litbridge: warning: --token is readable by every user of this machine (ps, /proc/PID/cmdline); "
    f"use --token-file FILE or ${TOKEN_ENV}"
)


class _TokenOnArgv(argparse.Action):
    """`--token T`, kept for old scripts: stores T and says once on stderr that it is visible to others."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        eprint(TOKEN_ON_ARGV_WARNING)
        setattr(namespace, self.dest, values)


def tcp_token(args: argparse.Namespace) -> str | None:
    """The TCP token for `args`: --token, else --token-file, else $LITBRIDGE_TOKEN, else the daemon's token file
    next to --socket (`litbridge.client.find_token`); None when there is none."""
    return getattr(args, "token", None) or find_token(getattr(args, "token_file", None), args.socket)


def add_fleet_args(parser: argparse.ArgumentParser, *, env: bool = False) -> None:
    """`--nats URL` and its options (fleet name, credentials, TLS; `litbridge.fleet.config`, shared with
    `serve`): the subcommand then talks to the fleet's daemons through NATS instead of the local socket.
    `env`: also `--nats-allow-plaintext-env` (create)."""
    from litbridge.fleet import config

    config.add_arguments(parser)
    if env:
        parser.add_argument(
            "--nats-allow-plaintext-env",
            action="store_true",
            help="send --env over a NATS connection without TLS (refused otherwise: it is readable on the wire)",
        )


def fleet_config(args: argparse.Namespace) -> Any:
    """The `FleetConfig` of `--nats ...`, None without --nats; raises LitbridgeError('bad_usage') on bad input."""
    from litbridge.fleet import config

    try:
        return config.from_args(args)
    except config.FleetConfigError as exc:
        raise LitbridgeError("bad_usage", str(exc)) from None


def connect_fleet(args: argparse.Namespace, **options: Any) -> Any:
    """A `Fleet.connect` for the `--nats` options in `args` (an awaitable / async context manager)."""
    from litbridge.fleet.client import Fleet
    from litbridge.fleet.client import _Connecting as _FleetConnecting

    fleet = Fleet(
        fleet_config(args),
        allow_plaintext_env=bool(getattr(args, "nats_allow_plaintext_env", False)),
        **options,
    )
    return _FleetConnecting(fleet)


@contextlib.asynccontextmanager
async def connect_any(args: argparse.Namespace, **options: Any) -> AsyncIterator[tuple[Any, str]]:
    """(client, session) for `args.session`: the local daemon's `Client` and SESSION, or with --nats the
    fleet's `FleetDaemon` (the same methods) for DAEMON/SESSION and SESSION."""
    if fleet_config(args) is None:
        async with connect(args, **options) as client:
            yield client, args.session
        return
    from litbridge.fleet.client import split_target

    daemon, session = split_target(args.session)
    async with connect_fleet(args) as fleet:
        yield fleet.daemon(daemon), session


def add_session_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    main: Callable[[argparse.Namespace], Awaitable[int]],
    *,
    help: str,
    description: str,
    json_help: str,
    arguments: Callable[[argparse.ArgumentParser], object] | None = None,
) -> argparse.ArgumentParser:
    """A subcommand on one SESSION, of the local daemon or (with --nats) DAEMON/SESSION of a fleet: SESSION and
    --channel, then what `arguments` adds, then the connection and fleet options; it runs `main(args)`."""
    p = subparsers.add_parser(name, help=help, description=description)
    add_session_arg(p, fleet=True)
    if arguments is not None:
        arguments(p)
    add_connection_args(p, json_help=json_help)
    add_fleet_args(p)
    p.set_defaults(func=lambda args: run(lambda: main(args)))
    return p


async def session_reply(
    args: argparse.Namespace, call: Callable[[Any, str], Awaitable[dict[str, Any]]], done: str
) -> int:
    """Run one command on `args.session` (`call(client, session)`, local or fleet) and show its reply: as JSON
    with --json, else `SESSION: done`."""
    async with connect_any(args) as (client, session):
        ev = await call(client, session)
    if args.json:
        print_json(ev)
    else:
        print(f"{shown(str(ev.get('session') or session))}: {done}")
    return EXIT_OK


def add_session_arg(parser: argparse.ArgumentParser, *, fleet: bool = False) -> None:
    where = "; with --nats, DAEMON/SESSION" if fleet else ""
    parser.add_argument(
        "session", metavar="SESSION", help=f"session name (the key is SESSION or SESSION:CHANNEL){where}"
    )
    parser.add_argument("--channel", dest="channel_id", metavar="CHANNEL", help="channel id of a sub-session")


def connect(args: argparse.Namespace, **options: Any) -> _Connecting:
    """A `Client.connect` for the connection options in `args`."""
    return Client.connect(
        socket=getattr(args, "socket", None),
        port=getattr(args, "port", None),
        token=getattr(args, "token", None),
        token_file=getattr(args, "token_file", None),
        **options,
    )


def eprint(*parts: object, file: TextIO | None = None) -> None:
    print(*parts, file=file or sys.stderr, flush=True)


def print_json(ev: Any, file: TextIO | None = None) -> None:
    """One event as one compact JSON line (the `--json` output)."""
    out = file or sys.stdout
    out.write(orjson.dumps(ev).decode() + "\n")
    out.flush()


def run(main: Callable[[], Awaitable[int]]) -> int:
    """Run a subcommand's coroutine; turn client errors into a message on stderr and exit code 1."""
    try:
        return asyncio.run(_guarded(main))
    except KeyboardInterrupt:
        return EXIT_CTRL_C


async def _guarded(main: Callable[[], Awaitable[int]]) -> int:
    try:
        return await main()
    except DaemonNotRunning as exc:
        eprint(f"litbridge: {exc.message}")
        return EXIT_ERROR
    except LitbridgeError as exc:
        if isinstance(exc, UntrustedDaemon) or isinstance(exc.__cause__, UntrustedDaemon):  # or on reconnect
            return untrusted(exc)
        eprint(f"litbridge: {error_text(exc)}")
        return EXIT_ERROR
    except BrokenPipeError:
        return closed_stdout()


def untrusted(exc: LitbridgeError) -> int:
    """Say that the TCP listener was refused (it did not prove it is the daemon); the exit status for it."""
    eprint(f"litbridge: refusing to talk to it: {exc.message} [{exc.code}]")
    return EXIT_UNTRUSTED


def error_text(exc: LitbridgeError) -> str:
    """`SESSION: message [code]` when the daemon's error names a session (its `session` field), so
    `session not found` says which one; `message [code]` otherwise. The name is escaped (`shown`)."""
    ev = exc.event or {}
    session = ev.get("session")
    if isinstance(session, str) and session:
        channel = ev.get("channel_id")
        key = f"{session}:{channel}" if isinstance(channel, str) and channel else session
        return f"{shown(key)}: {exc.message} [{exc.code}]"
    return f"{exc.message} [{exc.code}]"


def closed_stdout() -> int:
    """The reader of our stdout went away (`litbridge schema | head`): stop quietly, as Unix tools do.

    stdout is pointed at /dev/null so the interpreter's final flush cannot raise again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_ERROR


def describe_exit(code: object) -> str:
    """A CLI's end as a person reads it: `exit status 0`, `ended by SIGHUP, signal 1`, `exit status unknown`.

    The wire's `exit_code` follows Python's convention: negative N means the process died of signal N."""
    if not isinstance(code, int):
        return "exit status unknown"
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"ended by {signal.Signals(-code).name}, signal {-code}"
    except ValueError:
        return f"ended by signal {-code}"


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """A plain left-aligned text table (wcwidth-aware, so CJK / emoji session names line up)."""
    from wcwidth import wcswidth

    def width(s: str) -> int:
        w = wcswidth(s)
        return w if w >= 0 else len(s)

    cells = [[str(h) for h in headers]] + [["-" if v is None or v == "" else str(v) for v in r] for r in rows]
    widths = [max(width(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for r in cells:
        parts = [c + " " * (widths[i] - width(c)) for i, c in enumerate(r)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def parse_env(pairs: Iterable[str]) -> dict[str, str]:
    """`K=V` strings to a dict; raises ValueError naming the bad item."""
    out: dict[str, str] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        out[key] = value
    return out
