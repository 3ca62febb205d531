"""Fixtures of the Qwen Code driver tests: the real Qwen Code 0.24.4 and a Node 22 (both fetched by
tests/fetch_fixtures.py), a private HOME and a scripted chat-completions mock per test, one `litbridge serve` daemon
per module and a schema-checking client. Helpers live in qwen_env.py.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from mock_chat import MockChat
from qwen_env import Daemon, LBClient, QwenHome, make_home, qwen_mock

from fetch_fixtures import qwen_missing


@pytest.fixture(scope="session")
def qwen_ok() -> None:
    why = qwen_missing()
    if why:
        pytest.skip(why)


@pytest.fixture
def mock() -> Iterator[MockChat]:
    with qwen_mock() as m:
        yield m


@pytest.fixture
def qwen_home(tmp_path: Path, mock: MockChat) -> QwenHome:
    h = make_home(tmp_path)
    h.configure(mock.url)
    return h


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, qwen_ok: None) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"))
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
