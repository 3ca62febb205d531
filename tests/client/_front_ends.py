"""Fixtures shared by the front ends' tests (`litbridge acp`, `litbridge mcp`): one real daemon per module
(tests use distinct session names), with the fake rift (which asks questions) on hand, and a watching client
whose every event is checked against `litbridge schema` (tests/client/_daemon.py does the check and fails the
module on a violation). A conftest imports them by name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from _daemon import Daemon, running_daemon

from litbridge.client import Client


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with running_daemon() as d:
        yield d


@pytest_asyncio.fixture
async def watcher(daemon: Daemon) -> AsyncIterator[Client]:
    """A client subscribed to every session: everything the daemon emits while the test runs is decoded (and
    so schema-checked) here too."""
    async with Client.connect(socket=daemon.socket) as c:
        await c.hello(subscribe="*")
        yield c
