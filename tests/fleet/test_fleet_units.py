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
    out = lb("--nats", "nats://127.0.0.1:1", "--fleet", "x y", "list")
    assert out.returncode == 1 and "fleet name 'x y'" in out.stderr, out
    out = lb("--nats", "nats://127.0.0.1:1", "--fleet", "x y", "list", "--fleet", "ok")
    assert "fleet name" not in out.stderr and "cannot connect to NATS" in out.stderr, out
    out = lb("--nats", "nats://127.0.0.1:1", "schema")
    assert out.returncode == 2 and "does not take fleet options" in out.stderr, out
