"""`serve --cpus` / `--cli-cpus`: CPU lists read as taskset writes them; every CLI bound to its CPUs by each spawn
path right after its exec, every thread of it included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from litbridge.pty import child_env, cpus, resolve, spawn
from litbridge.pty.unix import METHODS

linux = pytest.mark.skipif(not cpus.supported(), reason="CPU binding is Linux's")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", {0}), ("1-3", {1, 2, 3}), ("0,2-3", {0, 2, 3}), (" 4 , 1 ", {1, 4}), ("2-2", {2})],
)
def test_parse_reads_a_taskset_list(text: str, expected: set[int]) -> None:
    assert cpus.parse(text) == expected
    assert cpus.parse(cpus.fmt(expected)) == expected


@pytest.mark.parametrize("text", ["", "a", "1-", "-1", "3-1", "0,,1", "1-2-3", "8192", "0-9000"])
def test_parse_refuses_what_is_not_a_list(text: str) -> None:
    with pytest.raises(cpus.CpusError):
        cpus.parse(text)


def test_fmt_folds_runs() -> None:
    assert cpus.fmt({5, 0, 1, 2, 7, 8}) == "0-2,5,7-8"
    assert cpus.fmt({3}) == "3"


@linux
def test_check_names_the_cpus_the_daemon_may_use() -> None:
    allowed = frozenset(os.sched_getaffinity(0))
    assert cpus.check(allowed) == allowed
    beyond = max(allowed) + 1
    with pytest.raises(cpus.CpusError, match=f"CPU {beyond} is not available to the daemon \\(it may use "):
        cpus.check(frozenset({beyond}))


@pytest.fixture
def one_cpu() -> Iterator[int]:
    """The CLIs bound to one CPU of the several this process may use (on one CPU no binding shows)."""
    allowed = sorted(os.sched_getaffinity(0)) if cpus.supported() else []
    if len(allowed) < 2:
        pytest.skip("needs Linux and two CPUs to run on")
    cpus.use_for_clis(frozenset({allowed[-1]}))
    try:
        yield allowed[-1]
    finally:
        cpus.use_for_clis(None)


def _threads_cpus(pid: int) -> dict[int, set[int]]:
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


TWO_THREADS = (
    "import threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); time.sleep(30)"
)
"""A CLI that starts a second thread at once."""


def _second_thread(pid: int) -> None:
    """Until process `pid` runs two threads (10 s at most)."""
    deadline = time.monotonic() + 10
    while len(os.listdir(f"/proc/{pid}/task")) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("transport", ["pty", "pipes"])
def test_every_spawn_path_binds_the_cli(one_cpu: int, method: str, transport: str) -> None:
    e = child_env(caller_env={"PATH": os.environ.get("PATH", os.defpath)})
    p = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", transport, method=method)
    try:
        assert os.sched_getaffinity(p.pid) == {one_cpu}
        assert os.sched_getaffinity(0) != {one_cpu}, "the daemon itself stays where it was"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


@pytest.mark.parametrize("method", METHODS)
def test_every_thread_the_cli_starts_is_bound(one_cpu: int, method: str) -> None:
    """A thread the CLI starts at once is on the CLIs' CPUs too."""
    p = spawn([sys.executable, "-c", TWO_THREADS], dict(os.environ), None, method=method)
    try:
        _second_thread(p.pid)
        threads = _threads_cpus(p.pid)
        assert len(threads) >= 2 and all(c == {one_cpu} for c in threads.values()), threads
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


@linux
def test_pin_daemon_moves_every_thread() -> None:
    """In a child process (pinning this one would bind the test run): its threads, the one started before the
    pin included, end on the CPU asked for."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs to run on")
    code = (
        "import os, threading, time\n"
        "from litbridge.pty import cpus\n"
        "t = threading.Thread(target=time.sleep, args=(1,)); t.start()\n"
        f"cpus.pin_daemon(frozenset({{{allowed[0]}}}))\n"
        "print(sorted({min(os.sched_getaffinity(int(x))) for x in os.listdir('/proc/self/task')}),"
        " len(os.listdir('/proc/self/task')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"[{allowed[0]}]", "2"]


def test_apply_moves_the_threads_a_cli_started_before_it(one_cpu: int) -> None:
    """`apply` on a CLI that already runs two threads (started while the CLIs' CPUs were unset) moves both."""
    cpus.use_for_clis(None)
    p = spawn([sys.executable, "-c", TWO_THREADS], dict(os.environ), None)
    try:
        _second_thread(p.pid)
        assert all(c != {one_cpu} for c in _threads_cpus(p.pid).values())
        cpus.use_for_clis(frozenset({one_cpu}))
        cpus.apply(p.pid)
        threads = _threads_cpus(p.pid)
        assert len(threads) >= 2 and all(c == {one_cpu} for c in threads.values()), threads
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


def test_apply_leaves_a_gone_cli_alone(one_cpu: int, caplog: pytest.LogCaptureFixture) -> None:
    """No error and no warning: a CLI that exited at once is not a refused binding."""
    p = spawn(["/bin/true"], dict(os.environ), None)
    os.waitpid(p.pid, 0)
    with caplog.at_level("WARNING", logger="litbridge.pty.cpus"):
        cpus.apply(p.pid)
    assert not caplog.records
