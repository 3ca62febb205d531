"""Fixtures for the Copilot driver tests: the real Copilot CLI binary (tests/fetch_fixtures.py), a private HOME
per test, one chat-completions mock per test, one `litbridge serve` daemon per module and a client whose every
event must validate against `litbridge schema` (helpers in copilot_env.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from copilot_env import CopilotHome, Daemon, LBClient, make_home, require_copilot_binary
from mock_chat import MockChat


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    return require_copilot_binary()


@pytest.fixture
def mock() -> Iterator[MockChat]:
    with MockChat() as m:
        yield m


@pytest.fixture
def copilot_home(tmp_path: Path) -> CopilotHome:
    return make_home(tmp_path)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, copilot_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), copilot_bin)
    yield d
    d.stop()


@pytest_asyncio.fixture
async def lb(daemon: Daemon) -> AsyncIterator[LBClient]:
    client = await LBClient.connect(daemon)
    yield client
    await client.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name[:30]}-{uuid.uuid4().hex[:6]}"
