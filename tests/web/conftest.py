"""Fixtures for the web view: a real `litbridge serve --web 127.0.0.1:0` daemon and headless Chromium.

Chromium is Debian's (installed by tests/fetch_fixtures.py), driven by Playwright's Python package with
it as the executable (never a downloaded browser build); tests skip with the reason when it is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from mock_anthropic import MockAnthropic
from mock_gemini import MockGemini
from mock_openai import MockOpenAI
from web_helpers import ARTIFACTS, WebDaemon, start_web_daemon

from fetch_fixtures import CHROMIUM_ARGS, chromium_binary
from litbridge.protocol.jsonschema import protocol_schema


@pytest.fixture(scope="module")
def web_daemon() -> Iterator[WebDaemon]:
    d = tempfile.mkdtemp(prefix="lbw-")
    wd = start_web_daemon(d)
    yield wd
    code = wd.proc.stop()
    assert code == 0, wd.proc.log()
    assert not os.path.exists(wd.socket + ".web"), "the web info file outlives the daemon"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def anthropic_mock() -> Iterator[MockAnthropic]:
    """The project's mock Anthropic Messages API (real Claude Code tests)."""
    with MockAnthropic() as m:
        yield m


@pytest.fixture
def openai_mock() -> Iterator[MockOpenAI]:
    """The project's mock OpenAI Responses API (real Codex CLI tests)."""
    with MockOpenAI() as m:
        yield m


@pytest.fixture
def gemini_mock() -> Iterator[MockGemini]:
    """The project's mock Gemini API (real Gemini CLI tests)."""
    with MockGemini() as m:
        yield m


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium_binary()
    if exe is None:
        pytest.skip("no chromium (tests/fetch_fixtures.py installs it with apt-get when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a test extra")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, web_daemon: WebDaemon, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh context with the page opened through a one-time `litbridge web` link."""
    ctx = browser.new_context(viewport={"width": 1800, "height": 1000})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto(web_daemon.login_link())
    pg.wait_for_function("() => document.querySelector('#conn').dataset.state === 'open'")
    yield pg
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(Exception):
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
    events = pg.evaluate("() => window.litbridge.events")
    ctx.close()
    assert not [e for e in errors if "WebSocket" not in e], errors
    validator = jsonschema.Draft202012Validator(protocol_schema())
    for ev in events:  # every event the page received is a valid protocol event
        validator.validate(ev)
