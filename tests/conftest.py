"""Root of the test suite: what every test shares.

- Helper modules are importable by name from any test: pyproject's `pythonpath` puts `tests/` (fetch_fixtures),
  `tests/fakes`, `tests/daemon` (lbd_helpers) and `tests/client` (_daemon) on sys.path, in one place instead of
  a `sys.path` edit in each file.
- Every event an in-process `Session` emits, in any test, validates against `litbridge schema` (an autouse
  check; daemons run as subprocesses are checked by the client helpers that read their events).
- Daemons the tests start keep their state (stored resume tokens) in a private `$XDG_STATE_HOME`, never in the
  developer's `~/.local/state`, and read their config from a private, empty `$XDG_CONFIG_HOME`, never the
  developer's `~/.config/litbridge/config.toml` (whose `[notify]` would notify for test daemons); both are set
  here, before any test spawns one, and removed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

_STATE_HOME = tempfile.mkdtemp(prefix="lbt-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME
_CONFIG_HOME = tempfile.mkdtemp(prefix="lbt-config-")
os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_STATE_HOME, ignore_errors=True)
    shutil.rmtree(_CONFIG_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _session_events_obey_the_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Wraps `Session._emit`: a violation is recorded (raising inside the session would be swallowed by its own
    callback guard) and fails the test at teardown."""
    from lbd_helpers import check_event

    from litbridge.session import Session

    violations: list[str] = []
    emit = Session._emit

    def checked(self: Session, event: dict[str, Any]) -> None:
        try:
            check_event(event)
        except AssertionError as exc:
            violations.append(str(exc))
        emit(self, event)

    monkeypatch.setattr(Session, "_emit", checked)
    yield
    assert not violations, "events violating `litbridge schema`:\n" + "\n".join(violations[:5])
