"""Shared fixtures for the Claude driver tests: the real binary (one for the run), private temp HOMEs, one mock
Anthropic API per test, one `litbridge serve` daemon per module, and a tiny JSON-lines socket client.

The daemon is spawned as a subprocess with a whitelisted environment (no inherited CLAUDE_* / ANTHROPIC_*);
each session gets its own HOME, cwd and mock URL through `create.env`, so tests cannot see each other's files.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from claude_env import ClaudeHome, make_home, require_claude_binary
from lbd_helpers import EventClient, ServeDaemon
from mock_anthropic import MockAnthropic


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real Claude Code 2.1.328 binary; skips (with the reason) only if it cannot be installed or run."""
    return require_claude_binary()  # never fetches (npm, ~370 MB): tests/fetch_fixtures.py's job


@pytest.fixture
def mock() -> Iterator[MockAnthropic]:
    with MockAnthropic() as m:
        yield m


@pytest.fixture
def claude_home(tmp_path: Path) -> ClaudeHome:
    """A private, onboarded HOME (no trust / API-key pre-approval) with a cwd inside it."""
    return make_home(tmp_path)


class Daemon(ServeDaemon):
    """The daemon (lbd_helpers.ServeDaemon) with our PATH: nothing of the developer's Claude setup leaks in."""

    def __init__(self, base: Path) -> None:
        super().__init__(base, ("PATH", "LANG", "LC_ALL", "USER", "TMPDIR", "LITBRIDGE_NO_EXTENSIONS"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"))
    yield d
    d.stop()


LBClient = EventClient  # the shared real-CLI client (schema- and turn-order-checked)


@pytest_asyncio.fixture
async def lb(daemon: Daemon) -> AsyncIterator[LBClient]:
    client = await LBClient.connect(daemon)
    yield client
    await client.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    """A unique session key per test (one daemon serves the whole module)."""
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:6]}"
