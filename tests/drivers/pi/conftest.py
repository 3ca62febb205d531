"""Fixtures of the Pi driver tests: the real Pi 0.73.1 (installed by tests/fetch_fixtures.py), a private HOME per
test, one scripted mock chat-completions API per test, one `litbridge serve` daemon per module and a client whose
every event must validate against `litbridge schema` (helpers in pi_env.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from mock_chat import MockChat
from pi_env import Daemon, LBClient, PiHome, make_home

from fetch_fixtures import pi_launcher, pi_missing


@pytest.fixture(scope="session")
def pi_bin() -> Path:
    """The folder holding the real `pi` launcher (node_modules/.bin); skips with the reason when missing."""
    why = pi_missing()
    if why:
        pytest.skip(why)
    return pi_launcher().parent


@pytest.fixture
def mock() -> Iterator[MockChat]:
    with MockChat() as m:
        yield m


@pytest.fixture
def pi_home(tmp_path: Path, mock: MockChat) -> PiHome:
    return make_home(tmp_path, mock.url)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, pi_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), pi_bin)
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
