"""`serve --cli-cgroup`: every CLI started in one cgroup, by each spawn path, before its own code runs.

The cgroup tests need a cgroup this process may make (root on a cgroup v1 `cpu` hierarchy or on a cgroup v2
mount, as on the CI machines); elsewhere they skip. The refusals run everywhere on Linux.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lbd_helpers import cgroup_member, cgroup_paths, cgroups_of, in_cgroup, make_cgroup, remove_cgroup

from litbridge.pty import cgroup, child_env, resolve, spawn
from litbridge.pty.unix import METHODS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux's")


@pytest.fixture
def cli_group() -> Iterator[Path]:
    group = make_cgroup()
    if group is None:
        pytest.skip("no cgroup can be made here (needs root on a cgroup v1 cpu or a cgroup v2 mount)")
    try:
        cgroup.use(group)
        yield group
    finally:
        cgroup.use(None)
        remove_cgroup(group)


def _env() -> dict[str, str]:
    return child_env(caller_env={"PATH": os.environ.get("PATH", os.defpath)})


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("transport", ["pty", "pipes"])
def test_every_spawn_path_starts_the_cli_in_the_cgroup(cli_group: Path, method: str, transport: str) -> None:
    e = _env()
    p = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", transport, method=method, nice=3)
    try:
        assert cgroup_member(p.pid, cli_group), cgroups_of(p.pid)
        assert not cgroup_member("self", cli_group), "the daemon itself stays where it was"
        assert str(p.pid) in (cli_group / "cgroup.procs").read_text().split()
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


def test_the_vfork_path_moves_the_cli_before_it_runs_its_own_code(
    cli_group: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first thing the program reads of itself is already the CLIs' cgroup, and no one moved it after the
    fact."""

    def late(pid: int) -> bool:
        raise AssertionError("the vfork path moved the child after the fact")

    monkeypatch.setattr(cgroup, "join", late)
    out = tmp_path / "cgroup.txt"
    e = _env()
    script = f"cat /proc/self/cgroup > {out}; exec sleep 30"
    p = spawn([resolve("sh", e) or "sh", "-c", script], e, "/tmp", "pty", method="vfork")
    try:
        deadline = time.monotonic() + 10
        while not (out.exists() and out.read_text().endswith("\n")) and time.monotonic() < deadline:
            time.sleep(0.02)
        paths = cgroup_paths(out.read_text())
        assert in_cgroup(paths, cli_group), paths
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


def test_without_a_cgroup_the_cli_stays_in_the_daemons() -> None:
    assert cgroup.fd() == -1 and cgroup.path() is None
    e = _env()
    p = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", "pty")
    try:
        assert cgroups_of(p.pid) == cgroups_of("self")
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


def test_a_directory_that_is_not_a_cgroup_is_refused(tmp_path: Path) -> None:
    with pytest.raises(cgroup.CgroupError, match="not a cgroup directory"):
        cgroup.use(tmp_path)
    with pytest.raises(cgroup.CgroupError, match="not a cgroup directory"):
        cgroup.use(tmp_path / "missing")
    assert cgroup.fd() == -1, "a refused directory leaves no cgroup in use"


def test_a_cgroup_the_daemon_may_not_write_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "group"
    fake.mkdir()
    (fake / "cgroup.procs").write_text("")
    (fake / "cgroup.procs").chmod(0o444)
    if os.access(fake / "cgroup.procs", os.W_OK):  # root writes anything
        pytest.skip("this user may write any file")
    with pytest.raises(cgroup.CgroupError, match="cannot write"):
        cgroup.use(fake)


def test_a_cgroup_that_refuses_processes_is_refused(tmp_path: Path) -> None:
    """`use` tries the cgroup on a throwaway child: here /dev/full as the procs file, whose every write fails
    (ENOSPC), as a cgroup v2 with controllers on below it fails with EBUSY."""
    fake = tmp_path / "group"
    fake.mkdir()
    (fake / "cgroup.procs").symlink_to("/dev/full")
    with pytest.raises(cgroup.CgroupError, match="refuses processes"):
        cgroup.use(fake)
    assert cgroup.fd() == -1


@pytest.mark.parametrize("method", METHODS)
def test_a_move_refused_later_is_logged_and_the_cli_runs_on(
    method: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A move the cgroup refuses after `use` took it (by either spawn path): a warning naming the pid, and the
    CLI runs on where the daemon is."""
    full = os.open("/dev/full", os.O_WRONLY | os.O_CLOEXEC)
    monkeypatch.setattr(cgroup, "_fd", full)
    e = _env()
    try:
        p = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", "pty", method=method)
        try:
            assert f"pid {p.pid}" in caplog.text and "cgroup" in caplog.text, caplog.text
            assert cgroups_of(p.pid) == cgroups_of("self")
        finally:
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)
    finally:
        os.close(full)


def test_a_cgroup_without_a_cpu_weight_is_taken_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A cgroup whose CPU controller is off (no `cpu.shares` / `cpu.weight`, e.g. cgroup v2 without `+cpu` in
    the parent's subtree_control) still takes the CLIs, but the log says it will not weigh them."""
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "cgroup.procs").write_text("")
    try:
        assert cgroup.use(bare) == bare
        assert "has no CPU weight" in caplog.text
        caplog.clear()
        (bare / "cpu.weight").write_text("100")
        cgroup.use(bare)
        assert "has no CPU weight" not in caplog.text
    finally:
        cgroup.use(None)
