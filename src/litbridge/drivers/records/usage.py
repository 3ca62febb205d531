"""One turn's token usage, in the protocol's four counters, however the CLI reports it.

A record reports usage per API call (Claude: per message id, written again as the message grows; Gemini: per
`gemini` record id) or as one running total of the turn (Codex): either is `put` under a key (the message id, or
one fixed key for a running total) and the turn's usage is the sum over keys, a later `put` replacing its key's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


def tokens(input: Any = 0, output: Any = 0, cache_read: Any = 0, cache_creation: Any = 0) -> dict[str, int]:
    """The protocol's usage dict from a CLI's counters (None or missing counts as 0)."""
    return {
        "input_tokens": int(input or 0),
        "output_tokens": int(output or 0),
        "cache_read_tokens": int(cache_read or 0),
        "cache_creation_tokens": int(cache_creation or 0),
    }


class UsageTally:
    """A turn's usage: `put(key, usage)` per call (same key: replaced), `total` the sum (None before any)."""

    def __init__(self) -> None:
        self.by_key: dict[Hashable, dict[str, int]] = {}

    def reset(self) -> None:
        self.by_key = {}

    def put(self, key: Hashable, usage: dict[str, int]) -> None:
        self.by_key[key] = usage

    def __bool__(self) -> bool:
        return bool(self.by_key)

    @property
    def total(self) -> dict[str, int] | None:
        if not self.by_key:
            return None
        out = dict.fromkeys(FIELDS, 0)
        for u in self.by_key.values():
            for k in FIELDS:
                out[k] += int(u.get(k, 0))
        return out
