"""Where the daemon listens and how it guards that place: default socket path, 0700 dir, 0600 socket and
token files, the live-daemon check (never steal) and stale-socket reclaim, peer-uid checks.

No asyncio servers here; `server.py` binds. Clients import `default_socket_path` / `token_path` too.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
import struct
import sys
import tempfile


class AlreadyRunning(Exception):
    """A live daemon owns the socket (exit status 3)."""


def default_socket_dir() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "litbridge")
    uid = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return os.path.join(tempfile.gettempdir(), f"litbridge-{uid}")


def default_socket_path() -> str:
    """`$XDG_RUNTIME_DIR/litbridge/litbridge.sock`, else `<tempdir>/litbridge-<uid>/litbridge.sock`."""
    return os.path.join(default_socket_dir(), "litbridge.sock")


def attach_path(socket_path: str) -> str:
    return socket_path + ".attach"


def token_path(socket_path: str) -> str:
    """The TCP auth token lives next to the socket path (0600)."""
    return socket_path + ".token"


def ensure_private_dir(path: str) -> None:
    """Create `path` 0700 (whatever the umask); refuse a dir owned by someone else or open to others."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise PermissionError(f"{path} is owned by uid {st.st_uid}, not us; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def prepare_socket_dir(socket_path: str) -> None:
    """The default dir is made private (0700); a custom path's dir is only created if missing."""
    sock_dir = os.path.dirname(os.path.abspath(socket_path))
    if os.path.abspath(socket_path) == os.path.abspath(default_socket_path()):
        ensure_private_dir(sock_dir)
    elif not os.path.isdir(sock_dir):
        os.makedirs(sock_dir, mode=0o700, exist_ok=True)
        os.chmod(sock_dir, 0o700)


def is_live(path: str, timeout: float = 1.0) -> bool:
    """True when something accepts connections on the Unix socket `path`."""
    if not hasattr(socket, "AF_UNIX"):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def claim_socket_path(path: str) -> None:
    """Make `path` (and its .attach) bindable: raise AlreadyRunning if a daemon is live, unlink stale ones."""
    for p in (path, attach_path(path)):
        if not os.path.lexists(p):
            continue
        mode = os.lstat(p).st_mode
        if not stat.S_ISSOCK(mode):
            raise FileExistsError(f"{p} exists and is not a socket; refusing to replace it")
        if p == path and is_live(p):
            raise AlreadyRunning(f"a live daemon already owns {p}; refusing to steal it")
        os.unlink(p)


def write_token(path: str) -> str:
    """A fresh random token written 0600 (created with O_EXCL after removing an old one)."""
    token = secrets.token_hex(32)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600) if hasattr(os, "fchmod") else None
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    return token


def read_token(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (SO_PEERCRED on Linux, getpeereid via LOCAL_PEERCRED on BSD/macOS)."""
    try:
        if sys.platform.startswith("linux"):
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
            return uid
        local_peercred = getattr(socket, "LOCAL_PEERCRED", 0x001)
        data = sock.getsockopt(0, local_peercred, struct.calcsize("2i") + 16 * 4)
        _version, uid = struct.unpack_from("2i", data)
        return uid
    except (OSError, AttributeError, struct.error):
        return None


def unlink_quietly(*paths: str) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError, OSError):
            os.unlink(p)
