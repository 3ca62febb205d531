"""Where a client finds the daemon, and whether it may trust what listens there.

The default control socket, the attach address and the TCP token, by the daemon's own rules (so client and
daemon can never disagree). `check_socket_path` (before connecting) and `check_peer` (after, before the
first byte is sent) refuse a socket planted by another user; `answer_challenge` checks a TCP daemon's proof
of the token. Opens nothing itself.
"""

from __future__ import annotations

import ipaddress
import os
import socket as _socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any

from litbridge.client.errors import UnsafeSocket, UntrustedDaemon
from litbridge.daemon import paths as daemon_paths
from litbridge.protocol import auth
from litbridge.protocol.spec import ATTACH_SUFFIX


def default_socket_path() -> Path:
    """The control socket `litbridge serve` binds without --socket: `$LITBRIDGE_SOCKET` when set, else the
    daemon's default path (one rule, `litbridge.daemon.paths`, so client and daemon never disagree)."""
    override = os.environ.get("LITBRIDGE_SOCKET")
    if override:
        return Path(override)
    return Path(daemon_paths.default_socket_path())


def attach_socket_path(socket: str | os.PathLike[str]) -> Path:
    """The attach socket that belongs to control socket `socket` (`<socket>.attach`).

    >>> attach_socket_path("/run/user/1000/litbridge/litbridge.sock").name
    'litbridge.sock.attach'
    """
    return Path(f"{os.fspath(socket)}{ATTACH_SUFFIX}")


def token_path(socket: str | os.PathLike[str] | None = None) -> Path:
    """Where the daemon writes its TCP token: next to the socket path, as `<socket>.token`."""
    return Path(daemon_paths.token_path(os.fspath(socket if socket is not None else default_socket_path())))


def read_token(socket: str | os.PathLike[str] | None = None) -> str | None:
    """The TCP token the daemon wrote, or None when there is no readable token file."""
    return read_token_file(token_path(socket))


def read_token_file(path: str | os.PathLike[str]) -> str | None:
    """The token in file `path` (surrounding whitespace dropped), or None when it is unreadable or empty."""
    try:
        return Path(path).read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


TOKEN_ENV = "LITBRIDGE_TOKEN"
"""The environment variable a TCP client takes its token from: unlike an argument, no other user can read it."""


def find_token(
    token_file: str | os.PathLike[str] | None = None, socket: str | os.PathLike[str] | None = None
) -> str | None:
    """The TCP token when none was given: from `token_file` when named, else `$LITBRIDGE_TOKEN`, else the
    token file the daemon wrote next to `socket`. Called again on every connect: a restarted daemon writes a
    new token file. None when none of them has one."""
    if token_file is not None:
        return read_token_file(token_file)
    return os.environ.get(TOKEN_ENV, "").strip() or read_token(socket)


def no_token_hint(token_file: str | os.PathLike[str] | None, socket: str | os.PathLike[str] | None) -> str:
    """What to do when `find_token` found nothing, for the error message."""
    if token_file is not None:
        return f"{os.fspath(token_file)} (--token-file) is unreadable or empty"
    return f"set ${TOKEN_ENV}, pass --token-file FILE, or make {token_path(socket)} readable"


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def check_socket_path(path: str | os.PathLike[str]) -> None:
    """Refuse, before connecting, a socket another user could have planted: the socket must be owned by us;
    the default socket's directory must be a real directory (lstat: no symlink) owned by us with no group or
    other access (the daemon makes it 0700). A missing path is left to connect() to report. Raises UnsafeSocket.
    """
    uid = _uid()
    if uid is None:
        return
    p = os.fspath(path)
    if os.path.abspath(p) == os.path.abspath(os.fspath(default_socket_path())) and not os.environ.get(
        "LITBRIDGE_SOCKET"
    ):
        d = os.path.dirname(os.path.abspath(p))
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise UnsafeSocket(f"{d} is not a real directory (a symlink?); refusing to connect to {p}")
        if st.st_uid != uid:
            raise UnsafeSocket(f"{d} is owned by uid {st.st_uid}, not {uid}; refusing to connect to {p}")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeSocket(
                f"{d} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}); refusing to connect to {p}"
            )
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafeSocket(f"cannot check {p}: {exc.strerror or exc}") from None
    if st.st_uid != uid:
        raise UnsafeSocket(f"{p} is owned by uid {st.st_uid}, not {uid}; refusing to connect")


def check_peer(sock: _socket.socket | None, address: str) -> None:
    """Refuse a connected Unix socket whose listener runs as another user (before sending anything)."""
    uid = _uid()
    if sock is None or uid is None or getattr(sock, "family", None) != getattr(_socket, "AF_UNIX", None):
        return
    from litbridge.daemon.paths import peer_uid  # the one SO_PEERCRED / getpeereid reader

    peer = peer_uid(sock)
    if peer is not None and peer != uid:
        raise UnsafeSocket(
            f"the process listening at {address} runs as uid {peer}, not {uid}; refusing to use it"
        )


_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp for LISTEN


def _proc_addr(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """`0100007F:1E78` (host-order 32-bit words in hex, port in hex) -> (127.0.0.1, 7800)."""
    hexip, _, hexport = text.partition(":")
    raw = b"".join(struct.pack("=I", int(hexip[i : i + 8], 16)) for i in range(0, len(hexip), 8))
    return _plain(ipaddress.ip_address(raw)), int(hexport, 16)


def _plain(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def tcp_peer_owner(sock: _socket.socket | None) -> int | None:
    """Linux: the uid that owns the listening end of our TCP connection, from /proc/net/tcp{,6}: the entry of
    the accepted socket (it keeps its listener's uid), else the LISTEN entry on the peer's address and port.
    None when it cannot be told (not Linux, /proc unreadable, no entry)."""
    if sock is None or not sys.platform.startswith("linux"):
        return None
    try:
        ours, theirs = sock.getsockname(), sock.getpeername()
        here = (_plain(ipaddress.ip_address(ours[0])), ours[1])
        there = (_plain(ipaddress.ip_address(theirs[0])), theirs[1])
    except (OSError, ValueError, TypeError, IndexError):
        return None
    listener: int | None = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        port_hex = f":{there[1]:04X}"
        for row in rows:
            cols = row.split()
            if len(cols) < 8 or not cols[1].endswith(port_hex):
                continue  # another port: not worth parsing
            try:
                local, remote, uid = _proc_addr(cols[1]), _proc_addr(cols[2]), int(cols[7])
            except (IndexError, ValueError):
                continue
            if local == there and remote == here:
                return uid
            if cols[3] == _TCP_LISTEN and local[1] == there[1] and local[0] in (there[0], _any(local[0])):
                listener = uid
    return listener


def _any(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address("0.0.0.0" if ip.version == 4 else "::")


def check_tcp_peer(sock: _socket.socket | None, address: str) -> None:
    """Refuse (UntrustedDaemon) a TCP listener that runs as another user, naming it, before anything is sent."""
    uid = _uid()
    owner = tcp_peer_owner(sock)
    if uid is None or owner is None or owner == uid:
        return
    try:
        import pwd

        who = f"uid {owner} ({pwd.getpwuid(owner).pw_name})"
    except (ImportError, KeyError):
        who = f"uid {owner}"
    raise UntrustedDaemon(
        f"the process listening on {address} runs as {who}, not uid {uid}: it is not your litbridge daemon; "
        "nothing was sent to it"
    )


def answer_challenge(token: str, nonce: str, challenge: dict[str, Any], where: str, refuse: str) -> str:
    """Our proof for the daemon's `auth_challenge`, once its own proof of the token checks out (one check for
    the control client and `litbridge attach`); UntrustedDaemon, its message starting with `refuse`, if not."""
    theirs = challenge.get("nonce")
    if auth.valid_nonce(theirs) and auth.same(
        auth.server_proof(token, nonce, theirs, where), challenge.get("proof")
    ):
        return auth.client_proof(token, nonce, theirs, where)
    raise UntrustedDaemon(
        f"{refuse}: its proof of the token is wrong. Another program holds the port, or it is a daemon with "
        "another token (a stale token?). Only a nonce was sent to it"
    )
