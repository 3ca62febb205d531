"""Fixtures of the opencode driver tests: the real opencode 1.18.33 (fetched by tests/fetch_fixtures.py), a private
HOME per test whose config points opencode at the shared chat-completions mock (tests/fakes/mock_chat.py), one
`litbridge serve` daemon per module (helpers in opencode_helpers.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from lbd_helpers import EventClient
from mock_chat import MockChat
from opencode_helpers import Daemon, OpencodeHome, make_home

from fetch_fixtures import opencode_binary, opencode_missing


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    why = opencode_missing()
    if why:
        pytest.skip(why)
    return opencode_binary()


@pytest.fixture
def mock() -> Iterator[MockChat]:
    with MockChat() as m:
        yield m


@pytest.fixture
def oc_home(tmp_path: Path, mock: MockChat) -> OpencodeHome:
    return make_home(tmp_path, mock.url)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, opencode_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), opencode_bin)
    yield d
    d.stop()


@pytest_asyncio.fixture
async def lb(daemon: Daemon) -> AsyncIterator[EventClient]:
    client = await EventClient.connect(daemon)
    yield client
    await client.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name[:30]}-{uuid.uuid4().hex[:6]}"
