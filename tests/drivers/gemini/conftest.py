"""Fixtures of the Gemini driver tests: the real Gemini CLI 0.61.0 (installed by tests/fetch_fixtures.py), a private
HOME per test, one scripted mock Gemini API per test, one `litbridge serve` daemon per module, and a recording
client (`lb`). Helpers live in gemini_helpers.py.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

# gemini_helpers is importable as pytest puts this conftest's folder on sys.path (no __init__.py), like the
# Codex tests' codex_env; mock_gemini and fetch_fixtures come from pyproject's pythonpath.
from gemini_helpers import Daemon, GeminiHome, Recorder, make_home
from mock_gemini import MockGemini

from fetch_fixtures import gemini_launcher, gemini_missing
from litbridge.client import Client


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The folder holding the real `gemini` launcher (node_modules/.bin); skips with the reason when missing."""
    why = gemini_missing()
    if why:
        pytest.skip(why)
    return gemini_launcher().parent


@pytest.fixture
def mock() -> Iterator[MockGemini]:
    with MockGemini() as m:
        yield m


@pytest.fixture
def gemini_home(tmp_path: Path) -> GeminiHome:
    h = make_home(tmp_path)
    h.trust()
    return h


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, gemini_bin: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("lbd"), gemini_bin)
    yield d
    d.stop()


@pytest_asyncio.fixture
async def lb(daemon: Daemon) -> AsyncIterator[Recorder]:
    client = await Client.connect(daemon.socket)
    rec = Recorder(client, daemon)
    yield rec
    await rec.close()


@pytest.fixture
def key(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:6]}"
