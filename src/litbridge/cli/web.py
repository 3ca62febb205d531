"""`litbridge web`: open the web view of a daemon started with `litbridge serve --web [HOST:]PORT`.

Prints the one-time link (the page's address with the daemon's token; the page then keeps the token in
an HttpOnly cookie and drops it from the address bar) and opens it in the default browser unless
`--print` is given. The address comes from `<socket>.web`, the token from the daemon's token file, both
written 0600 by the daemon.
"""

from __future__ import annotations

import argparse
import json
import sys
import webbrowser
from urllib.parse import quote

from litbridge.cli.common import add_socket_arg
from litbridge.client import paths


def link(socket: str | None) -> str:
    """The page's address with the token, or raise FileNotFoundError naming what is missing."""
    sock = str(socket or paths.default_socket_path())
    from litbridge.web import web_info_path

    info_path = web_info_path(sock)
    try:
        with open(info_path, encoding="utf-8") as f:
            url = json.load(f)["url"]
    except (OSError, ValueError, KeyError):
        raise FileNotFoundError(
            f"no web view for {sock} (start the daemon with `litbridge serve --web PORT`)"
        ) from None
    token = paths.read_token(sock)
    if not token:
        raise FileNotFoundError(f"no token file next to {sock}")
    return f"{url}?token={quote(token)}"


def main(args: argparse.Namespace) -> int:
    try:
        url = link(args.socket)
    except FileNotFoundError as exc:
        print(f"litbridge web: {exc}", file=sys.stderr)
        return 1
    print(url, flush=True)
    if not args.print_only and not webbrowser.open(url):
        print("litbridge web: no browser found; open the link above", file=sys.stderr)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("web", help="open the web view", description=__doc__)
    add_socket_arg(p)
    p.add_argument("--print", dest="print_only", action="store_true", help="print the link, do not open it")
    p.set_defaults(func=main)
