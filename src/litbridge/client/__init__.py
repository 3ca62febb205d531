"""The asyncio Python client for the litbridge daemon (`from litbridge.client import Client`).

Speaks the JSON-lines wire protocol only; see `client.py` for the API and docs/clients.md for a guide.

>>> from litbridge.client import Client, LitbridgeError, Turn
"""

from litbridge.client.client import TERMINAL_EVENTS, Client, Event, EventStream, Turn, session_key
from litbridge.client.errors import (
    AuthFailed,
    ConnectionLost,
    DaemonNotRunning,
    LitbridgeError,
    UnsafeSocket,
    UntrustedDaemon,
)
from litbridge.client.paths import (
    TOKEN_ENV,
    attach_socket_path,
    default_socket_path,
    find_token,
    read_token,
    token_path,
)

__all__ = [
    "TERMINAL_EVENTS",
    "TOKEN_ENV",
    "AuthFailed",
    "Client",
    "ConnectionLost",
    "DaemonNotRunning",
    "Event",
    "EventStream",
    "LitbridgeError",
    "Turn",
    "UnsafeSocket",
    "UntrustedDaemon",
    "attach_socket_path",
    "default_socket_path",
    "find_token",
    "read_token",
    "session_key",
    "token_path",
]
