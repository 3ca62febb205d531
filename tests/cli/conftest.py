"""Fixtures for CLI tests: a real daemon subprocess per module, shared helper in tests/client/_daemon.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _daemon import Daemon, running_daemon


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with running_daemon() as d:
        yield d
