"""Fixtures for client tests: a real daemon subprocess per module (tests use distinct session names)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _daemon import Daemon, running_daemon


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with running_daemon() as d:
        yield d
