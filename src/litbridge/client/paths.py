"""Where a client finds the daemon: the default control socket, the attach address and the TCP token.

Prefers the daemon's own helpers (so client and daemon can never disagree) and falls back to the rule
written in PROTOCOL.md when the daemon package is not importable. Opens nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _spec_default_socket() -> Path:
    """PROTOCOL.md rule: `$XDG_RUNTIME_DIR/litbridge/litbridge.sock`, else `<tmp>/litbridge-<uid>/litbridge.sock`."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "litbridge" / "litbridge.sock"
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return Path(tempfile.gettempdir()) / f"litbridge-{uid}" / "litbridge.sock"


def default_socket_path() -> Path:
    """The control socket `litbridge serve` binds without --socket: `$LITBRIDGE_SOCKET` when set, else the
    daemon's default path."""
    override = os.environ.get("LITBRIDGE_SOCKET")
    if override:
        return Path(override)
    try:
        from litbridge.daemon import paths as _daemon_paths

        return Path(_daemon_paths.default_socket_path())
    except (ImportError, AttributeError):
        return _spec_default_socket()


def attach_socket_path(socket: str | os.PathLike[str]) -> Path:
    """The attach socket that belongs to control socket `socket` (`<socket>.attach`).

    >>> attach_socket_path("/run/user/1000/litbridge/litbridge.sock").name
    'litbridge.sock.attach'
    """
    return Path(f"{os.fspath(socket)}.attach")


def token_path(socket: str | os.PathLike[str] | None = None) -> Path:
    """Where the daemon writes its TCP token: next to the socket path, as `<socket>.token`."""
    try:
        from litbridge.daemon import paths as _daemon_paths

        return Path(
            _daemon_paths.token_path(os.fspath(socket if socket is not None else default_socket_path()))
        )
    except (ImportError, AttributeError):
        pass
    base = Path(socket) if socket is not None else default_socket_path()
    return Path(f"{base}.token")


def read_token(socket: str | os.PathLike[str] | None = None) -> str | None:
    """The TCP token the daemon wrote, or None when there is no readable token file."""
    try:
        return token_path(socket).read_text().strip() or None
    except OSError:
        return None
