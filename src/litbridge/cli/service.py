"""`litbridge service install|uninstall|status`: run the daemon as a per-user service (systemd / launchd).

The unit starts this interpreter's `litbridge serve`, which resolves the clients' default socket when it starts
(only an explicit `--socket` is written into the unit); see `litbridge.service`.
"""

from __future__ import annotations

import argparse

from litbridge import service
from litbridge.cli import common


def _main(args: argparse.Namespace) -> int:
    try:
        unit = service.unit_for(args.socket)
        if args.action == "install":
            for line in service.install(unit, start=not args.no_start):
                print(line)
            if args.socket:
                print(f"the daemon listens on {unit.socket}")
            else:
                print(f"the daemon listens on its default socket ({unit.socket} in this environment)")
        elif args.action == "uninstall":
            for line in service.uninstall(unit, stop=not args.no_start):
                print(line)
        else:
            info = service.status(unit)
            if args.json:
                common.print_json(info)
            else:
                for key, value in info.items():
                    print(f"{key}: {value}")
            return common.EXIT_OK if info["installed"] else common.EXIT_ERROR
    except (service.ServiceError, OSError) as exc:
        common.eprint(f"litbridge service: {exc}")
        return common.EXIT_ERROR
    return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "service",
        help="install the daemon as a user service (systemd, launchd)",
        description="Install, remove or inspect the per-user service that runs `litbridge serve`: a systemd user "
        "unit (~/.config/systemd/user/litbridge.service) on Linux, a launchd agent "
        "(~/Library/LaunchAgents/dev.litbridge.plist) on macOS. `status` exits 1 when it is not installed.",
    )
    p.add_argument("action", choices=["install", "uninstall", "status"])
    p.add_argument(
        "--socket",
        metavar="PATH",
        help="the socket the service's daemon listens on, written into the unit (default: none written; the "
        "daemon resolves the clients' default, $XDG_RUNTIME_DIR/litbridge/litbridge.sock, when it starts)",
    )
    p.add_argument(
        "--no-start",
        action="store_true",
        help="only write (or remove) the unit file; do not start, stop, enable or disable the service",
    )
    p.add_argument("--json", action="store_true", help="status as one JSON object")
    p.set_defaults(func=_main)
