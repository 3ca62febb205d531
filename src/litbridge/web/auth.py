"""The web view's credentials: one-time login codes and the per-browser-session credentials they buy.

Why two kinds: the code travels in a link (a file, a terminal, the browser's history), so it is spent on
first use and dies within `CODE_TTL` seconds; the credential it is exchanged for never leaves the page's
origin (the page keeps it in `sessionStorage`, which another port of the same host cannot read, unlike a
cookie) and is presented as the first message of each WebSocket. Neither is the daemon's token. Both tables
are small and bounded (the oldest entry goes first), and both die with the daemon.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

CODE_TTL = 60.0
"""Seconds an unused login code stays valid."""
MAX_CODES = 16
"""Unspent codes kept at once; minting another drops the oldest."""
MAX_CREDENTIALS = 64
"""Browser sessions logged in at once; a new login drops the least recently used one."""


def _digest(secret: str) -> bytes:
    """Tables are keyed by a hash: a lookup's timing says nothing about the secret itself."""
    return hashlib.sha256(secret.encode("utf-8", "replace")).digest()


class WebLogins:
    """Mint codes (`mint`), spend one for a credential (`redeem`), check a credential (`check`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._codes: OrderedDict[bytes, float] = OrderedDict()  # digest -> expiry
        self._credentials: OrderedDict[bytes, None] = OrderedDict()

    def mint(self) -> str:
        """A fresh one-time code (256 random bits, URL-safe)."""
        self._expire()
        code = secrets.token_urlsafe(32)
        self._codes[_digest(code)] = self._clock() + CODE_TTL
        while len(self._codes) > MAX_CODES:
            self._codes.popitem(last=False)
        return code

    def redeem(self, code: str) -> str | None:
        """Spend `code`: a new credential, or None when the code is unknown, spent or expired."""
        self._expire()
        if self._codes.pop(_digest(code), None) is None:
            return None
        credential = secrets.token_urlsafe(32)
        self._credentials[_digest(credential)] = None
        while len(self._credentials) > MAX_CREDENTIALS:
            self._credentials.popitem(last=False)
        return credential

    def check(self, credential: str) -> bool:
        key = _digest(credential)
        if key not in self._credentials:
            return False
        self._credentials.move_to_end(key)
        return True

    def revoke_all(self) -> None:
        self._codes.clear()
        self._credentials.clear()

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, expiry in self._codes.items() if expiry <= now]:
            del self._codes[key]
