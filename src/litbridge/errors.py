"""`DriverError`: a failure a driver (or the turn desk on its behalf) reports to the client.

It stands below both the drivers and the session's turn desk (`turns.py`), which catches it from `submit`: the
drivers import the desk, so the desk must not import the drivers. `drivers/base.py` re-exports it as part of the
driver contract.
"""

from __future__ import annotations

from litbridge.protocol.spec import ERROR_CODES, TURN_ERROR_KINDS

__all__ = ["DriverError"]


class DriverError(Exception):
    """A failure reported to the client as `error{code,message}` (e.g. startup timeout, `no_question`), or,
    raised by `submit`, as `turn_error{kind}` when `code` is a turn-error kind. `code` must be one of the
    spec's codes (`protocol.spec.ERROR_CODES` / `TURN_ERROR_KINDS`): an invented code is a ValueError."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES and code not in TURN_ERROR_KINDS:
            raise ValueError(f"DriverError code {code!r} is not a protocol error code or turn-error kind")
        super().__init__(message)
        self.code = code
        self.message = message
