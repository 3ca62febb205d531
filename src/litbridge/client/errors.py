"""Exceptions raised by the litbridge client.

Every failure a caller can act on is a `LitbridgeError` with a machine-readable `code` (the daemon's
`error.code` when the daemon said no, or a client-side code such as `no_daemon` / `connection_lost`).
"""

from __future__ import annotations

from typing import Any


class LitbridgeError(Exception):
    """A command failed. `code` is stable and machine-readable; `message` is for humans.

    Daemon errors carry the daemon's code (`session_not_found`, `bad_field`, `bad_key`, ...) and the full
    `error` event in `event`.

    >>> try:
    ...     raise LitbridgeError("session_not_found", "session not found: work")
    ... except LitbridgeError as exc:
    ...     exc.code
    'session_not_found'
    """

    def __init__(self, code: str, message: str, event: dict[str, Any] | None = None) -> None:
        super().__init__(f"{message} ({code})" if code else message)
        self.code = code
        self.message = message
        self.event = event


class DaemonNotRunning(LitbridgeError):
    """Nothing is listening at the address: no daemon (or a stale socket file)."""

    def __init__(self, address: str, detail: str = "") -> None:
        msg = f"no litbridge daemon at {address} — start it with `litbridge serve`"
        super().__init__("no_daemon", msg + (f" ({detail})" if detail else ""))
        self.message = msg
        self.address = address


class ConnectionLost(LitbridgeError):
    """The connection dropped and could not be re-established (or the client was closed)."""

    def __init__(self, message: str = "connection to the litbridge daemon was lost") -> None:
        super().__init__("connection_lost", message)


class AuthFailed(LitbridgeError):
    """A TCP connection was refused: missing or wrong token."""

    def __init__(self, message: str) -> None:
        super().__init__("auth_failed", message)


class UntrustedDaemon(AuthFailed):
    """What listens on the TCP port did not prove it is the daemon (wrong or no `auth_challenge` proof: another
    program holds the port, or it is a daemon with another token), or on Linux it belongs to another user. Only
    the no-secret first line was sent to it: no token, command or `env`."""

    def __init__(self, message: str) -> None:
        LitbridgeError.__init__(self, "untrusted_daemon", message)


class UnsafeSocket(LitbridgeError):
    """The socket, its directory or the process listening on it belongs to another user (or the directory is a
    symlink or open to others): nothing was sent to it."""

    def __init__(self, message: str) -> None:
        super().__init__("unsafe_socket", message)
