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
- Under xdist (`-n 3 --dist loadfile`) the files that take longest start first (`SLOW_FIRST`), so no worker is left
  running a long end-to-end file alone at the end; the rest follow in collection order.
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


SLOW_FIRST = (
    # the files whose tests took longest, slowest first (seconds of one worker, idle 2-core machine, 2026-12-03);
    # a stale list only costs wall time, never a result
    "tests/drivers/gemini/test_gemini_e2e_real.py",  # 88
    "tests/drivers/opencode/test_opencode_e2e_real.py",  # 85
    "tests/test_build.py",  # 82
    "tests/hardening/test_reliability.py",  # 80
    "tests/drivers/qwen/test_qwen_e2e_real.py",  # 69
    "tests/term/test_differential.py",  # 65
    "tests/fleet/test_fleet_client.py",  # 59
    "tests/benchmarks_smoke/test_smoke_clis.py",  # 58
    "tests/drivers/copilot/test_copilot_e2e_real.py",  # 57
    "tests/acp/test_acp_agent.py",  # 55
    "tests/fleet/test_fleet_daemon.py",  # 53
    "tests/hardening/test_faults.py",  # 48
    "tests/drivers/claude/test_e2e_real.py",  # 47
    "tests/hardening/test_memory.py",  # 45
    "tests/web/test_web_backpressure.py",  # 43
    "tests/benchmarks_smoke/test_smoke_daemon.py",  # 40
    "tests/fleet/test_fleet_tls.py",  # 38
    "tests/mcp/test_mcp_server.py",  # 36
    "tests/web/test_browser_generic.py",  # 34
    "tests/drivers/codex/test_codex_e2e_real.py",  # 34
    "tests/test_imports.py",  # 32
    "tests/daemon/test_conformance.py",  # 26
    "tests/drivers/kimi/test_kimi_e2e_real.py",  # 24
    "tests/fleet/test_fleet_units.py",  # 24
    "tests/term/test_pyte_suite.py",  # 23
    "tests/drivers/pi/test_pi_e2e_real.py",  # 22
    "tests/drivers/test_generic.py",  # 21
    "tests/cli/test_commands.py",  # 20
)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = (
            False  # xdist's own order (most tests first) puts the long files last
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `SLOW_FIRST` files first, in its order; each file's tests keep theirs (a stable sort)."""
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    root = config.rootpath
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))


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
