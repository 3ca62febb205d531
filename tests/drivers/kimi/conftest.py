"""Fixtures of the Kimi Code driver tests: the real Kimi Code 2.1.0 and a Node 22 (installed by
tests/fetch_fixtures.py), a private HOME per test, one scripted mock chat-completions API per test, one
`litbridge serve` daemon per module and a schema-checking client (helpers in kimi_env.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from kimi_env import Daemon, KimiHome, LBClient, make_home
from mock_chat import MockChat

from fetch_fixtures import kimi_launcher, kimi_missing, node22_bin


@pytest.fixture(scope="session")
def kimi_bin() -> Path:
    why = kimi_missing()
    if why:
        pytest.skip(why)
    return kimi_launcher().parent


@pytest.fixture
def mock() -> Iterator[MockChat]:
    with MockChat() as m:
        yield m


@pytest.fixture
def kimi_home(tmp_path: Path, mock: MockChat) -> KimiHome:
    return make_home(tmp_path, mock.url)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, kimi_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), kimi_bin, node22_bin())
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
