"""Fixtures for the daemon conformance suite: one real daemon per test module (tests use distinct keys)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lbd_helpers
import pytest
from lbd_helpers import DaemonProc, start_daemon


@pytest.fixture(scope="module")
def tmpdir_short() -> Iterator[str]:
    # AF_UNIX paths are limited to ~107 bytes: keep them short.
    d = tempfile.mkdtemp(prefix="lbd-")
    yield d
    with contextlib.suppress(OSError):
        for p in Path(d).iterdir():
            p.unlink()
        os.rmdir(d)


@pytest.fixture(scope="module")
def daemon(tmpdir_short: str) -> Iterator[DaemonProc]:
    # nesting vars in the daemon's own env must not reach the children
    d = start_daemon(
        os.path.join(tmpdir_short, "d.sock"), env={"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"}
    )
    yield d
    code = d.stop()
    assert code == 0, d.log()


@pytest.fixture
def bash_create() -> Callable[..., dict[str, Any]]:
    """lbd_helpers.bash_create, for the tests that take it as a fixture."""
    return lbd_helpers.bash_create
