"""Where a client finds the daemon, and whether it may trust what listens there.

The default control socket, the attach address and the TCP token, by the daemon's own rules (so client and
daemon can never disagree). `check_socket_path` (before connecting) and `check_peer` (after, before the
first byte is sent) refuse a socket planted by another user. Opens nothing itself.
"""

from __future__ import annotations

import os
import socket as _socket
import stat
from pathlib import Path

from litbridge.client.errors import UnsafeSocket
from litbridge.daemon import paths as daemon_paths
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
    try:
        return token_path(socket).read_text().strip() or None
    except OSError:
        return None


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
