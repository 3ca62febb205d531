"""`litbridge web`: open the web view of a daemon started with `litbridge serve --web [HOST:]PORT`.

Asks the daemon, over its control socket, for a one-time login link (`web_login`: a fresh code in the
link's fragment, spent on first use, expiring unused within a minute; never the daemon's token) and opens
it in the default browser. The link itself never goes on a command line, where every local user could read
it (`/proc/*/cmdline`): the browser is given the path of a 0600 file, in a 0700 directory beside the
socket, that forwards to the link. `--print` prints the link instead.

With `--nats URL`: no daemon is asked; this process serves a read-only view of the whole fleet (sessions
grouped by daemon, from the registry; `litbridge.web.fleet`) on loopback until Ctrl-C, behind the same kind of
one-time link.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import tempfile
import time
import webbrowser
from pathlib import Path

from litbridge.cli.common import add_socket_arg
from litbridge.client import Client, LitbridgeError, paths
from litbridge.daemon.paths import ensure_private_dir

KEEP_FORWARDERS = 300.0
"""Seconds an old forwarding file is kept (its code is long spent or expired by then)."""


async def _login(sock: str) -> str:
    async with Client.connect(socket=sock, reconnect=False, connect_timeout=10.0) as client:
        reply = await client.request("web_login", timeout=30.0)
    return str(reply["url"])


def login_link(socket: str | None) -> str:
    """A fresh one-time link from the daemon at `socket`; raises LitbridgeError with the reason."""
    return asyncio.run(_login(str(socket or paths.default_socket_path())))


def forwarder(socket: str, url: str) -> Path:
    """Write a 0600 page that forwards the browser to `url`, in a private dir beside the socket."""
    directory = str(socket) + ".web-login"
    ensure_private_dir(directory)
    now = time.time()
    for old in Path(directory).glob("login-*.html"):  # spent long ago: tidy up
        with contextlib.suppress(OSError):
            if now - old.lstat().st_mtime > KEEP_FORWARDERS:
                old.unlink()
    path = Path(directory) / f"login-{secrets.token_hex(8)}.html"
    target = json.dumps(url).replace("<", "\\u003c")
    page = (
        '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
        f"<title>litbridge</title><script>location.replace({target});</script>"
        "<p>Opening the litbridge web view…</p>\n"
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def fleet_main(args: argparse.Namespace) -> int:
    """`--nats`: serve the read-only fleet view from this process (until Ctrl-C) and open its one-time link."""
    from litbridge.cli import common
    from litbridge.web import fleet as fleet_view
    from litbridge.web.server import parse_address

    try:
        host, port = parse_address(args.listen)
    except ValueError as exc:
        print(f"litbridge web: {exc}", file=sys.stderr)
        return 2

    def ready(view: fleet_view.FleetWebView) -> None:
        url = view.login_url()
        if args.print_only:
            print(url, flush=True)
            return
        directory = tempfile.mkdtemp(prefix="litbridge-fleet-web-")  # 0700: the forwarder holds the code
        page = forwarder(os.path.join(directory, "fleet"), url)
        if webbrowser.open(page.as_uri()):
            print(f"opened {view.url} in your browser (Ctrl-C stops the fleet view)", flush=True)
        else:
            print(f"no browser found; open {page} (Ctrl-C stops the fleet view)", flush=True)

    async def run() -> int:
        async with common.connect_fleet(
            args, reconnect_attempts=-1
        ) as fleet:  # a view outlives NATS restarts
            await fleet_view.serve(fleet, host, port, ready)
        return 0

    return common.run(run)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "nats", None):
        return fleet_main(args)
    sock = str(args.socket or paths.default_socket_path())
    try:
        url = login_link(sock)
    except LitbridgeError as exc:
        hint = " (start the daemon with `litbridge serve --web PORT`)" if exc.code != "no_web_view" else ""
        print(f"litbridge web: {exc}{hint}", file=sys.stderr)
        return 1
    if args.print_only:
        print(url, flush=True)
        return 0
    try:
        page = forwarder(sock, url)
    except OSError as exc:
        print(f"litbridge web: cannot write the login page: {exc}", file=sys.stderr)
        return 1
    base = url.split("#", 1)[0]
    if not webbrowser.open(page.as_uri()):
        print(
            "litbridge web: no browser found; run `litbridge web --print` and open that link", file=sys.stderr
        )
        return 1
    print(f"opened {base} in your browser (a one-time link, valid for a minute)", flush=True)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("web", help="open the web view", description=__doc__)
    add_socket_arg(p)
    p.add_argument(
        "--print", dest="print_only", action="store_true", help="print a one-time link, do not open a browser"
    )
    from litbridge.cli.common import add_fleet_args

    add_fleet_args(p)
    p.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="[HOST:]PORT",
        help="with --nats: where this process serves the read-only fleet view (default: loopback, any free port)",
    )
    p.set_defaults(func=main)
