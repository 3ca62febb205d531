"""The litbridge wire protocol v1: the schema table, line framing and event builders.

Shared by the daemon and the client; knows nothing about PTYs or CLIs. See `spec.py` for the table.
"""

from litbridge.protocol import events
from litbridge.protocol.framing import LineSplitter, TooLarge, decode, encode, read_lines
from litbridge.protocol.spec import (
    BUFFER_EVENTS,
    COMMANDS,
    ERROR_CODES,
    EVENTS,
    MAX_LINE,
    PROTOCOL_VERSION,
    STATES,
    TURN_ERROR_KINDS,
    Command,
    Event,
    Field,
    ProtocolError,
    session_key,
    validate_command,
)

__all__ = [
    "BUFFER_EVENTS",
    "COMMANDS",
    "ERROR_CODES",
    "EVENTS",
    "MAX_LINE",
    "PROTOCOL_VERSION",
    "STATES",
    "TURN_ERROR_KINDS",
    "Command",
    "Event",
    "Field",
    "LineSplitter",
    "ProtocolError",
    "TooLarge",
    "decode",
    "encode",
    "events",
    "read_lines",
    "session_key",
    "validate_command",
]
