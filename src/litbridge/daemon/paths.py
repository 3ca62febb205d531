"""Where the daemon listens and how it guards that place: default socket path, 0700 dir (never a symlink or
someone else's), 0600 socket and token files, the lock file that decides which daemon owns the socket
(never steal), stale-socket reclaim, unlinking only what we still own, peer-uid checks.

No asyncio servers here; `server.py` binds. Clients import `default_socket_path` / `token_path` too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import socket
import stat
import struct
import sys
import tempfile

from litbridge.protocol.spec import ATTACH_SUFFIX


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
    return socket_path + ATTACH_SUFFIX


def token_path(socket_path: str) -> str:
    """The TCP auth token lives next to the socket path (0600)."""
    return socket_path + ".token"


def lock_path(socket_path: str) -> str:
    """The daemon's lock file beside its socket: whoever holds it owns the socket path."""
    return socket_path + ".lock"


def check_private_dir(path: str, st: os.stat_result) -> None:
    """Refuse a socket dir that is a symlink, not a directory or not ours (as OpenSSH and tmux do)."""
    if stat.S_ISLNK(st.st_mode):
        raise PermissionError(f"{path} is a symlink; refusing to use it (remove it)")
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a directory; refusing to use it")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise PermissionError(f"{path} is owned by uid {st.st_uid}, not us; refusing to use it")


def ensure_private_dir(path: str) -> None:
    """Create `path` 0700 (whatever the umask); refuse a symlink, a non-directory or a dir owned by someone
    else, all checked with lstat, and chmod through an fd opened with O_NOFOLLOW (never a link's target)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    check_private_dir(path, os.lstat(path))
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        check_private_dir(path, st)  # the same inode we lstat'ed, not something swapped in since
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def prepare_socket_dir(socket_path: str) -> None:
    """The default dir is made private (0700); a custom path's dir is only created if missing."""
    sock_dir = os.path.dirname(os.path.abspath(socket_path))
    if os.path.abspath(socket_path) == os.path.abspath(default_socket_path()):
        parent = os.path.dirname(sock_dir)
        if not os.path.isdir(parent):
            os.makedirs(parent, mode=0o700, exist_ok=True)
        ensure_private_dir(sock_dir)
    elif not os.path.lexists(sock_dir):
        os.makedirs(sock_dir, mode=0o700, exist_ok=True)
        os.chmod(sock_dir, 0o700)


def _connect_error(path: str, timeout: float) -> OSError | None:
    """Connect once to the Unix socket `path` and hang up: None when it connected, else why not (a timeout
    of 0 never blocks, so a full accept backlog is EAGAIN)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        return None
    except OSError as exc:
        return exc
    finally:
        s.close()


def is_live(path: str, timeout: float = 1.0) -> bool:
    """True when something accepts connections on the Unix socket `path` (a hint only: with a full accept
    backlog a live daemon looks dead; ownership is decided by the lock file)."""
    return hasattr(socket, "AF_UNIX") and _connect_error(path, timeout) is None


def has_listener(path: str) -> bool:
    """True unless the Unix socket `path` certainly has no listener: a connect that succeeds, or fails because
    the accept backlog is full (EAGAIN) or for any reason other than "refused"/"gone", counts as a listener.
    The second veto before unlinking a socket, after the lock (whose file a tmp cleaner may have removed)."""
    if not hasattr(socket, "AF_UNIX"):
        return False
    exc = _connect_error(path, 0.0)
    return exc is None or exc.errno not in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK)


class SocketLock:
    """An exclusive `flock` on `<socket>.lock`, held for the daemon's whole life.

    Liveness is decided by the lock first (a live daemon with a full accept backlog or a stopped daemon
    refuses connections); `claim_socket_path` adds a second veto (a socket that has a listener is never
    unlinked). The lock file stays in place: unlinking it would let two daemons hold locks on two different
    inodes. If someone else removes or replaces it, `check()` (run periodically) locks a new one.
    """

    def __init__(self, socket_path: str) -> None:
        self.path = lock_path(socket_path)
        self.fd: int | None = None

    def acquire(self) -> None:
        """Raise AlreadyRunning when another daemon holds the lock."""
        self.fd = self._lock_file()

    def check(self) -> str | None:
        """While held: when the lock file was removed or replaced, lock the file now at the path (creating
        it). Returns what happened (for the log), or None when the lock file is still ours."""
        if self.fd is None:
            return None
        try:
            st = os.lstat(self.path)
            held = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                return None
            what = "replaced"
        except FileNotFoundError:
            what = "removed"
        try:
            fd = self._lock_file()
        except (AlreadyRunning, OSError) as exc:
            return f"lock file {self.path} was {what} and cannot be locked again yet: {exc}"
        os.close(self.fd)
        self.fd = fd
        return f"lock file {self.path} was {what}; locked it again"

    def _lock_file(self) -> int:
        import fcntl

        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                raise PermissionError(f"{self.path} is not a regular file of ours; refusing to use it")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise AlreadyRunning(
                    f"a live daemon{who} already owns {self.path[: -len('.lock')]}; refusing to steal it"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def claim_socket_path(path: str) -> None:
    """Make `path` (and its .attach) bindable once we hold the lock: a socket there is stale, unless it has a
    listener (its daemon's lock file was removed): then AlreadyRunning, and nothing is unlinked."""
    present = []
    for p in (path, attach_path(path)):
        if not os.path.lexists(p):
            continue
        if not stat.S_ISSOCK(os.lstat(p).st_mode):
            raise FileExistsError(f"{p} exists and is not a socket; refusing to replace it")
        if has_listener(p):
            raise AlreadyRunning(
                f"a live daemon already listens on {p} (its lock file {lock_path(path)} was missing); "
                "refusing to steal it"
            )
        present.append(p)
    for p in present:
        os.unlink(p)


def file_id(path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of `path` itself (not a link's target), or None when it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def unlink_if_ours(path: str, ident: tuple[int, int] | None) -> None:
    """Unlink `path` only when it is still the file we created (another daemon may have replaced it)."""
    if ident is not None and file_id(path) == ident:
        unlink_quietly(path)


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
