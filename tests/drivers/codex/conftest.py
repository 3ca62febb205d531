"""Fixtures for the Codex driver tests: the real Codex CLI 0.169.0 binary, a private HOME per test, one mock
Responses API per test, one `litbridge serve` daemon per module and a client whose every event must validate
against `litbridge schema` (helpers in codex_env.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from codex_env import (
    CodexHome,
    Daemon,
    LBClient,
    MockOpenAI,
    make_home,
    require_codex_binary,
)


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The real Codex CLI 0.169.0 binary (skips with the reason when it cannot run here)."""
    return require_codex_binary()


@pytest.fixture
def mock() -> Iterator[MockOpenAI]:
    with MockOpenAI() as m:
        yield m


@pytest.fixture
def codex_home(tmp_path: Path) -> CodexHome:
    return make_home(tmp_path)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, codex_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), codex_bin)
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
