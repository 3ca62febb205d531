"""`litbridge attach SESSION`: the session's raw 200x50 terminal in your terminal; Ctrl-] detaches.

Connects to the attach socket (`<socket>.attach`, or TCP port+1; there the daemon first proves it knows the
token, `_prove_daemon`), sends the selector line, then pipes
bytes both ways with the user's terminal in raw mode. It never parses the stream and never resizes the
session (the grid stays 200x50; a smaller terminal gets a warning).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import shutil
import socket
import sys
from typing import Any

import orjson

from litbridge.cli import common
from litbridge.client import UnsafeSocket, UntrustedDaemon, default_socket_path
from litbridge.client.paths import (
    answer_challenge,
    attach_socket_path,
    check_peer,
    check_socket_path,
    check_tcp_peer,
    no_token_hint,
)
from litbridge.protocol import auth
from litbridge.protocol.spec import GRID

DETACH = b"\x1d"  # Ctrl-]
# Modes a TUI may leave on; switched off on detach so the user's shell is usable again.
_RESTORE = b"\x1b[0m\x1b[?1049l\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[?25h"
_PEEK_SECONDS = 3.0
_HANDSHAKE_SECONDS = 10.0  # for the daemon's auth_challenge line (as the Python client's connect_timeout)
_CHALLENGE_MAX = 64 * 1024  # an auth_challenge line is ~200 bytes; a listener that sends more is not ours


def _open(args: argparse.Namespace) -> tuple[socket.socket, str]:
    if args.port is not None:
        address = f"127.0.0.1:{args.port + 1}"
        try:
            sock = socket.create_connection(("127.0.0.1", args.port + 1), timeout=5)
        except OSError as exc:
            raise _NoDaemon(address, exc.strerror or str(exc)) from None
        try:
            check_tcp_peer(sock, address)  # Linux: a listener of another user gets not even the nonce
        except UntrustedDaemon:
            sock.close()
            raise
        return sock, address
    base = args.socket or str(default_socket_path())
    path = str(attach_socket_path(base))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    try:
        check_socket_path(base)  # refuse a socket planted by another user before and after connecting
        check_socket_path(path)
        sock.connect(path)
        check_peer(sock, path)
    except UnsafeSocket:
        sock.close()
        raise
    except OSError as exc:
        sock.close()
        raise _NoDaemon(base, exc.strerror or str(exc)) from None
    return sock, path


class _NoDaemon(Exception):
    def __init__(self, address: str, detail: str) -> None:
        super().__init__(f"no litbridge daemon at {address} — start it with `litbridge serve` ({detail})")


def selector_line(args: argparse.Namespace, proof: str | None = None) -> bytes:
    """The selector; over TCP it carries our `auth.proof` (the token itself is never sent)."""
    sel: dict[str, Any] = {"session": args.session}
    if args.channel_id is not None:
        sel["channel_id"] = args.channel_id
    if args.control:
        sel["control"] = True
    if proof is not None:
        sel["auth"] = {"proof": proof}
    return orjson.dumps(sel) + b"\n"


class _NoToken(Exception):
    pass


def _prove_daemon(sock: socket.socket, args: argparse.Namespace, address: str) -> str:
    """The proof-first handshake on the TCP attach port (`litbridge.protocol.auth`, docs/protocol.md): send
    only `{"auth":{"nonce"}}`, check the daemon's `auth_challenge` proof of the token, return our own proof.
    Whatever holds the port learns nothing but a random nonce unless it proves it knows the token.
    Raises UntrustedDaemon (or _NoToken before anything is sent)."""
    token = common.tcp_token(args)
    if not token:
        raise _NoToken(f"no TCP token for {address}: {no_token_hint(args.token_file, args.socket)}")
    nonce = auth.new_nonce()
    refuse = f"the listener on {address} did not prove it is the litbridge daemon"
    sock.settimeout(_HANDSHAKE_SECONDS)
    try:
        sock.sendall(orjson.dumps({"auth": {"nonce": nonce}}) + b"\n")
        where = auth.endpoint(sock.getpeername())
        line = _read_line(sock)
    except TimeoutError:
        raise UntrustedDaemon(
            f"{refuse}: it did not answer the TCP auth handshake within {_HANDSHAKE_SECONDS:g} s "
            "(only a nonce was sent to it)"
        ) from None
    except OSError as exc:
        raise UntrustedDaemon(
            f"{refuse}: the connection failed ({exc}); only a nonce was sent to it"
        ) from None
    if not line:
        raise UntrustedDaemon(f"{refuse}: it closed the connection (only a nonce was sent to it)")
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        ev = None
    if isinstance(ev, dict) and ev.get("event") == "auth_challenge":
        return answer_challenge(token, nonce, ev, where, refuse)
    said = common.shown(line.decode("utf-8", "replace")[:200])  # its words must not drive our terminal
    raise UntrustedDaemon(
        f'{refuse}: it answered "{said}" instead of auth_challenge (not litbridge, or a daemon older '
        "than the proof-first handshake). Only a nonce was sent to it"
    )


def _read_line(sock: socket.socket) -> bytes:
    """The first non-blank line the peer sends (stripped; b"" when it closed first); reads at most
    _CHALLENGE_MAX bytes."""
    data = b""
    while len(data) <= _CHALLENGE_MAX:
        head, newline, _ = data.lstrip().partition(b"\n")
        if newline:
            return head.strip()
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.strip()


def _peek(sock: socket.socket) -> tuple[bytes, bool]:
    """The first bytes the daemon sends, and whether it closed right after (a rejection, not a paint)."""
    sock.settimeout(_PEEK_SECONDS)
    data = b""
    try:
        data = sock.recv(65536)
        if not data:
            return b"", True
        if data.startswith(b"\x1b"):
            return data, False
        # A rejection is a text line followed by close; read until close (briefly).
        sock.settimeout(0.5)
        while True:
            more = sock.recv(65536)
            if not more:
                return data, True
            data += more
            if data.lstrip().startswith(b"\x1b"):
                return data, False
    except TimeoutError:
        return data, False
    except OSError:
        return data, True


def _warn_size(out: Any) -> None:
    """Warn when the terminal really showing the session is smaller than its grid: the tty's own size, not
    `$COLUMNS`/`$LINES` (which a parent process may have set for itself), is what wraps the lines."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError):
        size = shutil.get_terminal_size((0, 0))
    if size.columns and (size.columns < GRID[0] or size.lines < GRID[1]):
        out.write(
            f"litbridge: warning: your terminal is {size.columns}x{size.lines}, the session's screen is "
            f"{GRID[0]}x{GRID[1]}; lines will wrap. Enlarge the window or zoom out for a faithful view.\r\n"
        )
        out.flush()


def _pump(sock: socket.socket, stdin_fd: int, stdout_fd: int, read_only: bool) -> str:
    """Pipe bytes both ways until detach or EOF; returns why it stopped."""
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "sock")
    try:
        sel.register(stdin_fd, selectors.EVENT_READ, "stdin")
    except (PermissionError, ValueError):  # epoll refuses regular files and /dev/null: no keys to read,
        pass  # as after stdin's EOF (`attach S --read-only < /dev/null > log` just records)
    try:
        while True:
            for key, _ in sel.select():
                if key.data == "sock":
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        return "closed"
                    _write_all(stdout_fd, data)
                else:
                    data = os.read(stdin_fd, 1024)
                    if not data:
                        sel.unregister(stdin_fd)
                        continue
                    cut = data.find(DETACH)
                    if cut >= 0:
                        if cut and not read_only:
                            _send_all(sock, data[:cut])
                        return "detached"
                    if not read_only:
                        _send_all(sock, data)
    finally:
        sel.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _send_all(sock: socket.socket, data: bytes) -> None:
    sock.setblocking(True)
    try:
        sock.sendall(data)
    finally:
        sock.setblocking(False)


def _refusal(text: bytes, args: argparse.Namespace) -> str:
    """The daemon's reason for closing an attach at once, in our words: its "no such session" line keeps the
    prefix lit-bridge-rs clients match on (`lit-bridge-rs: no such session 'KEY' (pid N has: [...])`)."""
    msg = text.decode("utf-8", "replace").strip()
    if msg.startswith("lit-bridge-rs: no such session"):
        key = args.session + (f":{args.channel_id}" if args.channel_id is not None else "")
        live = msg.rpartition(" has: ")[2].strip("[])")
        return f"no such session '{common.shown(key)}'" + (
            f" (running: {live})" if live else " (no sessions running)"
        )
    return msg.removeprefix("lit-bridge-rs: ") or "the daemon closed the attach connection"


def _main(args: argparse.Namespace) -> int:
    try:
        sock, address = _open(args)
    except _NoDaemon as exc:
        common.eprint(f"litbridge: {exc}")
        return common.EXIT_ERROR
    except UntrustedDaemon as exc:
        return common.untrusted(exc)
    except UnsafeSocket as exc:
        common.eprint(f"litbridge: {exc.message} [{exc.code}]")
        return common.EXIT_ERROR
    with contextlib.closing(sock):
        try:
            proof = _prove_daemon(sock, args, address) if args.port is not None else None
        except UntrustedDaemon as exc:
            return common.untrusted(exc)
        except _NoToken as exc:
            common.eprint(f"litbridge: {exc}")
            return common.EXIT_ERROR
        sock.sendall(selector_line(args, proof))
        first, closed = _peek(sock)
        if closed:
            common.eprint(f"litbridge: {_refusal(first, args)}")
            return common.EXIT_ERROR
        stdin_fd, stdout_fd = sys.stdin.fileno(), sys.stdout.fileno()
        is_tty = os.isatty(stdin_fd)
        saved = None
        if is_tty:
            import termios
            import tty

            saved = termios.tcgetattr(stdin_fd)
            _warn_size(sys.stderr)
            tty.setraw(stdin_fd)
        reason = "closed"
        try:
            if first:
                _write_all(stdout_fd, first)
            reason = _pump(sock, stdin_fd, stdout_fd, args.read_only)
        finally:
            if saved is not None:
                import termios

                _write_all(stdout_fd, _RESTORE)
                termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)
        print(
            "\r\n[detached]" if reason == "detached" else "\r\n[the session closed the connection]",
            flush=True,
        )
        return common.EXIT_OK


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "attach",
        help="watch and type into a session's raw terminal (Ctrl-] detaches)",
        description="Show SESSION's 200x50 terminal in yours and pipe your keystrokes to it. Ctrl-] detaches; the "
        "session keeps running. Only the first attacher types unless --control is given.",
    )
    common.add_session_arg(p)
    p.add_argument("--control", action="store_true", help="take the keyboard even if another attacher has it")
    p.add_argument("--read-only", action="store_true", help="never send keystrokes (only Ctrl-] is read)")
    common.add_connection_args(p, json_help="accepted for uniformity (attach is a raw byte stream)")
    p.set_defaults(func=_main)
