"""`ProcTable`: the one read of /proc that a wave of kills shares, and when it must be read again."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from litbridge.pty.base import TAG_VAR, ProcTable, machine_forks

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux /proc")


def _wait_for(pred, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


@LINUX
def test_finds_a_setsid_grandchild_below_its_cli_and_by_its_tag(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pidfile = tmp_path / "gc.pid"
    # the CLI stands in as a shell that starts a grandchild in a session of its own, then waits
    script = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' & wait"
    cli = subprocess.Popen(["sh", "-c", script], env={**os.environ, TAG_VAR: "t0ken"})
    gc = 0
    try:
        assert _wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
        gc = int(pidfile.read_text())
        table = ProcTable.read()
        below = [pid for pid, _ in table.descendants(cli.pid)]
        assert gc in below, (gc, below)
        assert os.getsid(gc) != os.getsid(cli.pid)
        tagged = {pid for pid, _ in table.tagged("t0ken")}
        assert {cli.pid, gc} <= tagged, tagged
        assert table.tagged("t0ke") == [] and table.tagged("t0kenX") == []  # the whole value, not a prefix
        start = {pid: st for pid, st in table.tagged("t0ken")}
        assert start[gc] == open(f"/proc/{gc}/stat").read().rsplit(")", 1)[1].split()[19]
    finally:
        if gc:
            with contextlib.suppress(ProcessLookupError):
                os.kill(gc, signal.SIGKILL)
        cli.kill()
        cli.wait()


@LINUX
def test_a_table_is_shared_until_the_machine_creates_a_process() -> None:
    for _ in range(50):  # a busy machine (the suite's other worker) may fork between two reads
        first = ProcTable.current()
        if ProcTable.current() is first:  # nothing new since: the same table, no second read of /proc
            break
    else:
        pytest.skip("the machine created a process between every two reads")
    child = subprocess.Popen(["sleep", "30"], env={**os.environ, TAG_VAR: "fresh"})
    try:
        again = ProcTable.current()
        assert again is not first  # a process was created: read again, and it is there
        assert child.pid in {pid for pid, _ in again.tagged("fresh")}
        assert child.pid in {pid for pid, _ in again.descendants(os.getpid())}
    finally:
        child.kill()
        child.wait()


def test_machine_forks_counts_up_or_is_unknown() -> None:
    before = machine_forks()
    if before is None:
        assert not os.path.exists("/proc/stat")
        return
    subprocess.run(["true"], check=True)
    after = machine_forks()
    assert after is not None and after > before
