"""Fixtures for the `litbridge mcp` tests: the front ends' shared daemon, schema-checking watcher and
raw `lb` connection (tests/client/_front_ends.py)."""

from _front_ends import daemon, lb, watcher

__all__ = ["daemon", "lb", "watcher"]
