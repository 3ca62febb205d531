"""Pure parts of the fleet client and its web view: addressing, liveness, grouping, the docstring examples."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest

from litbridge.client import LitbridgeError
from litbridge.fleet import client as fleet_client
from litbridge.fleet.client import Fleet, split_target
from litbridge.fleet.config import FleetConfig
from litbridge.web.fleet import group


def test_docstring_examples() -> None:
    result = doctest.testmod(fleet_client, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("bad", ["work", "/work", "d1/", "bad.name/work", "a b/x"])
def test_a_target_needs_a_valid_daemon_and_a_session(bad: str) -> None:
    with pytest.raises(LitbridgeError) as exc:
        split_target(bad)
    assert exc.value.code == "bad_usage"


def test_a_daemon_is_gone_after_the_ttl_it_states_else_the_clients() -> None:
    fleet = Fleet(FleetConfig(url="nats://127.0.0.1:4222"), ttl=9.0)
    assert fleet.stale_after({"ttl": 15.0}) == 15.0
    assert fleet.stale_after({}) == 9.0
    assert fleet.stale_after({"ttl": "soon"}) == 9.0  # a value from the wire is not trusted blindly
    assert fleet.stale_after({"ttl": True}) == 9.0


def test_the_web_view_groups_sessions_by_daemon() -> None:
    daemons = [
        {"daemon": "b", "host": "h2", "available": True},
        {"daemon": "a", "host": "h1", "available": False},
    ]
    sessions = [
        {"daemon": "b", "name": "z"},
        {"daemon": "b", "name": "y"},
        {"daemon": "a", "name": "x"},
        {"daemon": "c", "name": "orphan", "host": "h3"},  # its daemon entry is gone
    ]
    out = group(daemons, sessions)
    assert [d["daemon"] for d in out] == ["a", "b", "c"]
    assert [s["name"] for s in out[1]["session_list"]] == ["y", "z"]
    assert out[2]["available"] is False and out[2]["host"] == "h3"


def test_cli_says_clearly_when_nats_is_unreachable_or_the_url_is_bad() -> None:
    import subprocess
    import sys

    def lb(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "litbridge", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)

    down = lb("list", "--nats", "nats://127.0.0.1:1")
    assert down.returncode == 1 and "cannot connect to NATS at nats://127.0.0.1:1" in down.stderr, down.stderr
    bad = lb("send", "d0/x", "hi", "--nats", "http://example.org")
    assert bad.returncode == 1 and "[bad_usage]" in bad.stderr, bad.stderr
    stray = lb("create", "x", "--on", "d0", "--cli", "bash", "--socket", "/nonexistent/lb.sock")
    assert stray.returncode == 2 and "give --nats URL" in stray.stderr, stray.stderr


def lb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "litbridge", *args], capture_output=True, text=True, timeout=60
    )


def test_fleet_options_before_the_subcommand_are_passed_down() -> None:
    """`litbridge --nats URL list` is `litbridge list --nats URL` (here: no server there, so the same error);
    options after the subcommand win; a subcommand without fleet options refuses them."""
    for argv in (("--nats", "nats://127.0.0.1:1", "list"), ("list", "--nats", "nats://127.0.0.1:1")):
        out = lb(*argv)
        assert out.returncode == 1 and "cannot connect to NATS at nats://127.0.0.1:1" in out.stderr, out
        assert "Connect call failed" in out.stderr, out  # the cause, after one try (not 5 s of retries)
    out = lb("--nats", "nats://127.0.0.1:1", "--fleet", "x y", "list")
    assert out.returncode == 1 and "fleet name 'x y'" in out.stderr, out
    out = lb("--nats", "nats://127.0.0.1:1", "--fleet", "x y", "list", "--fleet", "ok")
    assert "fleet name" not in out.stderr and "cannot connect to NATS" in out.stderr, out
    out = lb("--nats", "nats://127.0.0.1:1", "schema")
    assert out.returncode == 2 and "does not take fleet options" in out.stderr, out


class _Watcher:
    """A KV watcher as nats-py hands it out, in the order its race delivers: the "caught up" marker (None)
    first, then the entries the server had already pushed (its consumer's num_pending was 0)."""

    def __init__(self, queue: list[object], pending: int, delivered: int) -> None:
        import datetime
        import types

        self.queue = queue
        self.stopped = False
        info = types.SimpleNamespace(
            num_pending=pending,
            delivered=types.SimpleNamespace(consumer_seq=delivered),
            created=datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc),
        )

        async def consumer_info() -> object:
            return info

        self._sub = types.SimpleNamespace(consumer_info=consumer_info)

    async def updates(self, timeout: float = 5.0) -> object:
        import nats.errors

        if not self.queue:
            raise nats.errors.TimeoutError
        return self.queue.pop(0)

    async def stop(self) -> None:
        self.stopped = True


class _Kv:
    def __init__(self, watcher: _Watcher) -> None:
        self.watcher = watcher

    async def watchall(self, **_: object) -> _Watcher:
        return self.watcher


def _entry(key: str, op: str | None = None) -> object:
    import types

    return types.SimpleNamespace(key=key, value=b"{}", operation=op)


def test_a_registry_read_counts_entries_instead_of_trusting_the_watchers_early_marker() -> None:
    """nats-py's watcher can say "caught up" (None) before the entries the server already pushed: the read
    takes as many messages as the consumer owes (num_pending + delivered), drops deletes, ignores the marker.
    (Reading until the first None, as before, returned an empty registry: a fleet view without daemons.)"""
    import asyncio

    from litbridge.fleet import registry

    queue = [None, _entry("daemon.d0"), _entry("session.d1.gone", "DEL"), _entry("daemon.d1")]
    watcher = _Watcher(queue, pending=0, delivered=3)
    entries, now = asyncio.run(registry.snapshot(_Kv(watcher)))
    assert [e.key for e in entries] == ["daemon.d0", "daemon.d1"]  # type: ignore[attr-defined]
    assert now.year == 2026 and watcher.stopped  # the server's clock, the consumer let go

    # a watcher whose count cannot be read: its own marker ends the read, as nats-py means it to
    blind = _Watcher([_entry("daemon.d0"), None, _entry("daemon.late")], pending=0, delivered=0)

    async def no_info() -> object:
        raise RuntimeError("no consumer info")

    blind._sub.consumer_info = no_info
    entries, _ = asyncio.run(registry.snapshot(_Kv(blind)))
    assert [e.key for e in entries] == ["daemon.d0"]  # type: ignore[attr-defined]
