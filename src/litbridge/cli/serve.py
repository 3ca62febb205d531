"""`litbridge serve`: run the daemon (uvloop on Unix, asyncio elsewhere) until SIGTERM/SIGINT.

Exit status: 0 after a clean shutdown, 3 when a live daemon already owns the socket (0 with
--already-running-ok), 1 when it cannot listen. Logs go to stderr (environment values are never logged).

This is the composition root: `run` builds the daemon and, as asked, the web view, notifications and the
NATS fleet link, and hands each the daemon's public face (`daemon/front.py`). The daemon knows none of them.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

from litbridge.cli.common import add_socket_arg

if TYPE_CHECKING:
    from litbridge.daemon.notify import NotifyConfig
    from litbridge.fleet.config import FleetConfig


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("serve", help="run the daemon", description=__doc__)
    add_socket_arg(
        p,
        "Unix socket path (default: $LITBRIDGE_SOCKET, else $XDG_RUNTIME_DIR/litbridge/litbridge.sock), "
        "the same default the client subcommands use",
    )
    p.add_argument(
        "--port", type=int, metavar="N", help="also listen on TCP 127.0.0.1:N (attach on N+1), token auth"
    )
    p.add_argument(
        "--web",
        metavar="[HOST:]PORT",
        help="also serve the web view (sessions, live terminal, chat) on HOST:PORT (host default 127.0.0.1); "
        "open it with `litbridge web`",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML config file (default $XDG_CONFIG_HOME/litbridge/config.toml, read when it exists); "
        "its [notify] table configures notifications (docs/notify.md)",
    )
    p.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="desktop|URL",
        help="notify when a session asks, finishes a turn, fails, exits or looks stuck: `desktop` "
        "(notify-send / osascript / a Windows toast) or a webhook URL (JSON POST, signed with "
        "$LITBRIDGE_NOTIFY_SECRET when set); repeatable",
    )
    p.add_argument(
        "--notify-events",
        metavar="KINDS",
        help="comma-separated kinds to notify: question,complete,turn_error,exited,stuck (default all)",
    )
    p.add_argument(
        "--notify-stuck-after",
        type=float,
        metavar="SECONDS",
        help="a session in thinking/responding/dialog this long is `stuck` (default 600)",
    )
    p.add_argument(
        "--notify-exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="never notify about sessions whose name matches GLOB (fnmatch); repeatable",
    )
    from litbridge.fleet.config import add_arguments as add_fleet_arguments

    add_fleet_arguments(p, daemon=True)
    p.add_argument(
        "--cli-nice",
        type=int,
        default=0,
        metavar="N",
        help="run every CLI N nice levels below the daemon (0-19, default 0; Unix): its process and, on Linux "
        "with autogroup scheduling, its session's group, so the daemon's events stay prompt while hundreds of "
        "CLIs saturate the CPUs",
    )
    p.add_argument(
        "--cli-cgroup",
        metavar="DIR",
        help="start every CLI in this cgroup (Linux; a cgroup directory you created and gave a CPU weight, "
        "which the daemon may write to): the CLIs then weigh one group against the daemon, however many run, "
        "where --cli-nice alone leaves each its own session group",
    )
    p.add_argument(
        "--cpus",
        metavar="LIST",
        help="run the daemon on these CPUs only (Linux; as taskset -c: 0 or 0-1 or 0,2): with --cli-cpus on the "
        "others, the CLIs do not fill the caches of the CPUs it wakes on",
    )
    p.add_argument(
        "--cli-cpus",
        metavar="LIST",
        help="run every CLI on these CPUs only (Linux; as taskset -c), bound right after its exec "
        "(without it, --cpus leaves the CLIs on every CPU the daemon had)",
    )
    p.add_argument(
        "--already-running-ok",
        action="store_true",
        help="exit 0, not 3, when a live daemon already owns the socket: for a service manager that restarts "
        "on any failure status (the launchd agent of `litbridge service install` passes it)",
    )
    p.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="stderr log level"
    )
    p.set_defaults(func=main)


def emulator_description() -> str:
    """Which terminal emulator the sessions will run: the compiled core, or the pyte fallback and why."""
    from litbridge import _core, term

    if term.Terminal is term.NativeTerminal:
        return f"compiled core ({_core.native.__file__ if _core.native else '?'})"
    why = (
        "LITBRIDGE_NO_EXTENSIONS=1"
        if os.environ.get("LITBRIDGE_NO_EXTENSIONS") == "1"
        else "extension not built"
    )
    return f"pyte fallback ({why}; several times slower)"


def _use_cpus(daemon: str | None, clis: str | None) -> int:
    """`--cpus` / `--cli-cpus`: checked, then the daemon pinned and the CLIs' CPUs set (`--cpus` alone leaves the
    CLIs on every CPU the daemon had, not on its own); 2 with the reason printed when a list is malformed, names a
    CPU the daemon may not use, or the platform has no CPU binding."""
    from litbridge.pty import cpus

    log = logging.getLogger("litbridge.serve")
    if not cpus.supported():
        print("litbridge serve: --cpus and --cli-cpus need Linux", file=sys.stderr)
        return 2
    chosen: dict[str, frozenset[int] | None] = {}
    for flag, text in (("--cpus", daemon), ("--cli-cpus", clis)):
        try:
            chosen[flag] = None if text is None else cpus.check(cpus.parse(text))
        except cpus.CpusError as exc:
            print(f"litbridge serve: {flag}: {exc}", file=sys.stderr)
            return 2
    mine, theirs = chosen["--cpus"], chosen["--cli-cpus"]
    if mine is not None and theirs is None:
        theirs = frozenset(os.sched_getaffinity(0))  # else the CLIs would inherit the daemon's pin
    if mine is not None:
        try:
            cpus.pin_daemon(mine)
        except OSError as exc:
            print(f"litbridge serve: --cpus: {exc.strerror}", file=sys.stderr)
            return 2
        log.info("daemon on CPU %s", cpus.fmt(mine))
    if theirs is not None:
        cpus.use_for_clis(theirs)
        log.info("CLIs on CPU %s", cpus.fmt(theirs))
    if mine is not None and theirs is not None and mine & theirs:
        log.warning(
            "--cpus and --cli-cpus share CPU %s: the CLIs still fill the daemon's caches there",
            cpus.fmt(mine & theirs),
        )
    return 0


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` dumps every thread's stack to stderr
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    logging.getLogger("litbridge.serve").info("emulator: %s", emulator_description())
    if sys.platform == "win32" and args.port is None:
        print("litbridge serve: --port <N> is required on this platform", file=sys.stderr)
        return 1
    if not 0 <= args.cli_nice <= 19:
        print(f"litbridge serve: --cli-nice must be 0-19, not {args.cli_nice}", file=sys.stderr)
        return 2
    if args.cli_nice and sys.platform == "win32":
        logging.getLogger("litbridge.serve").warning("--cli-nice is ignored on Windows (no nice values)")
    if args.cli_cgroup is not None:
        from litbridge.pty import cgroup

        if not sys.platform.startswith("linux"):
            print("litbridge serve: --cli-cgroup needs Linux", file=sys.stderr)
            return 2
        try:
            cgroup.use(args.cli_cgroup)
        except cgroup.CgroupError as exc:
            print(f"litbridge serve: --cli-cgroup: {exc}", file=sys.stderr)
            return 2
        logging.getLogger("litbridge.serve").info("CLIs start in the cgroup %s", args.cli_cgroup)
    if args.cpus is not None or args.cli_cpus is not None:
        status = _use_cpus(args.cpus, args.cli_cpus)
        if status:
            return status
    web = None
    if args.web is not None:
        from litbridge.web import parse_address

        try:
            web = parse_address(args.web)
        except ValueError as exc:
            print(f"litbridge serve: {exc}", file=sys.stderr)
            return 2
    from litbridge.daemon import notify

    try:
        notify_config = notify.build_config(
            args.config, args.notify, args.notify_events, args.notify_stuck_after, args.notify_exclude
        )
    except notify.ConfigError as exc:
        print(f"litbridge serve: {exc}", file=sys.stderr)
        return 2
    from litbridge.fleet.config import FleetConfigError, from_args

    try:
        fleet = from_args(args)
    except FleetConfigError as exc:
        print(f"litbridge serve: {exc}", file=sys.stderr)
        return 2
    if fleet is not None:
        try:
            import nats  # noqa: F401
        except ImportError:
            print(
                "litbridge serve: --nats needs nats-py (from a checkout: pip install '.[fleet]')",
                file=sys.stderr,
            )
            return 2
    coro = run(
        args.socket,
        args.port,
        web,
        notify_config,
        fleet,
        already_running_ok=args.already_running_ok,
        cli_nice=args.cli_nice,
    )
    if sys.platform != "win32":
        try:
            import uvloop
        except ImportError:
            return asyncio.run(coro)
        return uvloop.run(coro)
    return asyncio.run(coro)


async def run(
    socket_path: str | None = None,
    port: int | None = None,
    web: tuple[str, int] | None = None,
    notify: NotifyConfig | None = None,
    fleet: FleetConfig | None = None,
    *,
    already_running_ok: bool = False,
    cli_nice: int = 0,
) -> int:
    """Start, serve until SIGTERM/SIGINT, clean up; returns the exit status. `web` = (host, port) of the web
    view (a client of this daemon on the same event loop); `notify` the notifications (a tap on the hub);
    `fleet` the NATS link (publisher, command responder, registry; it connects in the background);
    `already_running_ok`: a live daemon on the socket is exit status 0, not 3 (nothing to restart);
    `cli_nice`: every CLI runs that many nice levels below the daemon.
    Imports are deferred: every `litbridge` subcommand imports this module to build its parser."""
    from litbridge.daemon import memory, paths
    from litbridge.daemon.server import EXIT_ALREADY_RUNNING, Daemon, listen_problem
    from litbridge.pty import limits

    memory.configure()
    limits.raise_open_files()  # a descriptor or three per session: a login's 1024 ran out at a few hundred
    daemon = Daemon(socket_path, port, cli_nice=cli_nice)
    daemon.install_signal_handlers()
    web_view = None
    try:
        await daemon.start()
        if web is not None:
            from litbridge.web import WebServer

            web_view = WebServer(daemon, *web)
            await web_view.start()
            daemon.web = web_view
    except paths.AlreadyRunning as exc:
        print(f"litbridge serve: {exc}", file=sys.stderr)
        return 0 if already_running_ok else EXIT_ALREADY_RUNNING
    except OSError as exc:
        where = daemon.socket_path + (f" / 127.0.0.1:{port}" if port is not None else "")
        print(
            f"litbridge serve: cannot listen on {where}: {listen_problem(daemon.socket_path, exc)}",
            file=sys.stderr,
        )
        await daemon.shutdown()
        return 1
    notifier = None
    if notify is not None and notify.enabled:
        from litbridge.daemon.notify import Notifier

        def killing(key: str) -> bool:
            s = daemon.sessions.get(key)
            return s is None or s.killing

        notifier = Notifier(notify, daemon.hub.daemon_id, lambda: web_view.url if web_view else None, killing)
        notifier.start()
        daemon.hub.taps.append(notifier.observe)
    fleet_link = None
    if fleet is not None:
        from litbridge.fleet.daemon import FleetLink

        fleet_link = FleetLink(daemon, fleet)
        fleet_link.start()
    memory.tune_gc()
    try:
        await daemon.serve_forever()
    finally:
        if fleet_link is not None:
            await fleet_link.aclose()
        if web_view is not None:
            await web_view.close()
        if notifier is not None:
            await notifier.aclose()
    return 0
