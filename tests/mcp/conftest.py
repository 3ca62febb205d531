"""Fixtures for the `litbridge mcp` tests: the front ends' shared daemon and schema-checking watcher
(tests/client/_front_ends.py)."""

from _front_ends import daemon, watcher

__all__ = ["daemon", "watcher"]
