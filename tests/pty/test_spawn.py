"""How a child is started: the compiled vfork spawner (the default on Linux) and the fork fallbacks (ptyprocess
for a PTY, subprocess for pipes) give the child the same world: its own session and process group, the PTY as
its controlling terminal (Ctrl-C typed into it interrupts the program), a 200x50 window, the env and cwd asked
for, no inherited fds, its exit status, and death with the process that spawned it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lbd_helpers import pid_alive

from litbridge.pty import child_env, resolve, spawn
from litbridge.pty.base import SpawnError, _proc_stat
from litbridge.pty.unix import METHODS, spawn_method

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux PTY spawn paths")

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    return child_env(base={"PATH": os.environ["PATH"]}, caller_env=extra)


class Child:
    """A spawned child's output (and stderr, for pipes) and exit, collected on the running loop."""

    def __init__(
        self, argv: list[str], method: str, cwd: str = "/tmp", transport: str = "pty", **env: str
    ) -> None:
        e = _env(**env)
        self.p = spawn([resolve(argv[0], e) or argv[0], *argv[1:]], e, cwd, transport, method=method)
        self.out, self.err = bytearray(), bytearray()
        self.done: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self.p.start(asyncio.get_running_loop(), self.out.extend, self.done.set_result, self.err.extend)

    async def seen(self, text: bytes, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.out:
            assert time.monotonic() < deadline, f"{text!r} never came; got {bytes(self.out)!r}"
            await asyncio.sleep(0.02)

    async def exit(self, timeout: float = 20.0) -> int | None:
        return await asyncio.wait_for(self.done, timeout)


def test_vfork_is_the_default_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITBRIDGE_SPAWN", raising=False)
    assert spawn_method() == "vfork"
    monkeypatch.setenv("LITBRIDGE_SPAWN", "fork")
    assert spawn_method() == "fork", "the ptyprocess path stays reachable"


@pytest.mark.parametrize("transport", ["pty", "pipes"])
def test_default_spawn_runs_no_python_in_a_copy_of_the_daemon(tmp_path: Path, transport: str) -> None:
    """A fork copies the daemon and runs Python in the copy until exec (cost growing with the daemon, and
    at-fork hooks firing); the default path never forks the interpreter."""
    marker = tmp_path / "forked"
    script = textwrap.dedent(
        f"""
        import asyncio, os
        from litbridge.pty import child_env, spawn

        os.register_at_fork(after_in_child=lambda: open({str(marker)!r}, "a").write("x"))

        async def main():
            env = child_env(base={{"PATH": os.environ["PATH"]}})
            p = spawn(["/bin/sh", "-c", "exit 3"], env, "/tmp", {transport!r})
            done = asyncio.get_running_loop().create_future()
            p.start(asyncio.get_running_loop(), lambda b: None, done.set_result)
            print("exit", await asyncio.wait_for(done, 20))

        asyncio.run(main())
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "LITBRIDGE_SPAWN"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and "exit 3" in out.stdout, out
    assert not marker.exists(), "the interpreter was forked to start the child"


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_own_session_group_and_controlling_tty(method: str) -> None:
    c = Child(["sh", "-c", "tty; exec sleep 60"], method)
    await c.seen(b"/dev/pts/")
    pid = c.p.pid
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid != os.getpgid(0)
    fields = _proc_stat(pid)
    assert fields is not None
    assert int(fields[4]) != 0, "no controlling terminal"
    assert int(fields[5]) == pid, "the child is not the terminal's foreground group"
    assert b"not a tty" not in c.out
    c.p.write(b"\x03")  # Ctrl-C typed into the PTY: SIGINT to the foreground group
    assert await c.exit() == -signal.SIGINT


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("transport", ["pty", "pipes"])
async def test_signals_the_daemon_ignores_are_not_ignored_by_the_child(method: str, transport: str) -> None:
    """A daemon started in the background by a shell (`litbridge serve &`) ignores SIGINT and SIGQUIT, and an
    ignored signal stays ignored across exec: its CLIs would never see a Ctrl-C. The child starts with every
    signal at its default."""
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        c = Child(["sh", "-c", "echo up; exec sleep 60"], method, transport=transport)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    await c.seen(b"up")
    if transport == "pty":
        c.p.write(b"\x03")  # Ctrl-C typed into its terminal
    else:
        os.kill(c.p.pid, signal.SIGINT)
    assert await c.exit() == -signal.SIGINT


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_window_env_cwd_and_exit_status(method: str, tmp_path: Path) -> None:
    c = Child(["sh", "-c", 'stty size; pwd; echo "foo=$FOO"; exit 7'], method, str(tmp_path), FOO="bar baz")
    assert await c.exit() == 7
    text = bytes(c.out).decode()
    assert "50 200" in text
    assert str(tmp_path) in text
    assert "foo=bar baz" in text


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_pipes_child_own_group_no_tty_streams_env_cwd_status(method: str, tmp_path: Path) -> None:
    script = (
        '[ -t 0 ] || echo notty; pwd; echo "foo=$FOO"; echo oops >&2; read line; echo "got $line"; exit 4'
    )
    c = Child(["sh", "-c", script], method, str(tmp_path), "pipes", FOO="bar")
    pid = c.p.pid
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid != os.getpgid(0)
    c.p.write(b"hello\n")
    c.p.close_stdin()
    assert await c.exit() == 4
    assert bytes(c.out) == f"notty\n{tmp_path}\nfoo=bar\ngot hello\n".encode()
    assert bytes(c.err) == b"oops\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_pipes_close_stdin_gives_eof(method: str) -> None:
    c = Child(["cat"], method, transport="pipes")
    c.p.write(b"a" * 300_000)  # more than a pipe holds: some of it is still queued
    c.p.close_stdin()
    assert await c.exit() == 0
    assert bytes(c.out) == b"a" * 300_000


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["pty", "pipes"])
@pytest.mark.parametrize("method", METHODS)
async def test_no_fd_of_the_daemon_reaches_the_child(method: str, transport: str) -> None:
    r, w = os.pipe()
    os.set_inheritable(r, True)  # even one the daemon left inheritable
    try:
        code = "import os; print('fds', sorted(int(f) for f in os.listdir('/proc/self/fd')))"
        c = Child([sys.executable, "-c", code], method, transport=transport)
        assert await c.exit() == 0
        assert b"fds [0, 1, 2, 3]" in c.out, bytes(c.out)  # 3: listdir's own
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.asyncio
@pytest.mark.parametrize("method", METHODS)
async def test_signal_dispositions_of_the_daemon_are_not_inherited(method: str) -> None:
    """A handler the daemon installed is the default in the child (what the daemon ignores stays ignored,
    as across fork + exec)."""
    old = signal.signal(signal.SIGUSR1, lambda *a: None)
    try:
        c = Child(["sh", "-c", "kill -USR1 $$; sleep 5"], method)
        assert await c.exit() == -signal.SIGUSR1
    finally:
        signal.signal(signal.SIGUSR1, old)


@pytest.mark.parametrize("method", METHODS)
def test_exec_failures_are_spawn_errors_and_leave_no_zombie(method: str, tmp_path: Path) -> None:
    not_exec = tmp_path / "data.txt"
    not_exec.write_text("x")
    before = _children()
    for argv in (["/nonexistent/prog"], [str(not_exec)], ["no-such-program-xyz"]):
        with pytest.raises(SpawnError, match="spawn failed"):
            spawn(argv, _env(), "/tmp", method=method)
    assert _children() == before


PARENT = """
import os, sys, time
from litbridge.pty import child_env, spawn

env = child_env(base={"PATH": os.environ["PATH"]})
argv = ["/bin/sh", "-c", "trap '' HUP TERM INT PIPE; while :; do sleep 0.2; done"]
p = spawn(argv, env, "/tmp", sys.argv[2], method=sys.argv[1])
print(p.pid, flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("transport", ["pty", "pipes"])
@pytest.mark.parametrize("method", METHODS)
def test_child_dies_with_the_process_that_spawned_it(method: str, transport: str) -> None:
    """kill -9 of the spawning process: the child, which ignores the terminal's hangup, is killed anyway."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, method, transport], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        time.sleep(0.3)
        assert pid_alive(pid)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 20
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(pid), f"pid {pid} outlived the process that spawned it"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)


STDIO_CLOSED = """
import asyncio, os, sys
from litbridge.pty import child_env, spawn

out = open(sys.argv[2], "w")
for fd in (0, 1, 2):
    os.close(fd)

async def main():
    env = child_env(base={"PATH": os.environ["PATH"]})
    p = spawn(["/bin/sh", "-c", "stty size; tty"], env, "/tmp", method=sys.argv[1])
    data = bytearray()
    done = asyncio.get_running_loop().create_future()
    p.start(asyncio.get_running_loop(), data.extend, done.set_result)
    code = await asyncio.wait_for(done, 20)
    out.write(f"{code} {bytes(data)!r}")

asyncio.run(main())
"""


@pytest.mark.parametrize("method", METHODS)
def test_daemon_with_its_stdio_closed(method: str, tmp_path: Path) -> None:
    """The PTY's fds may then be 0-2: the child still gets the terminal on stdin, stdout and stderr."""
    result = tmp_path / "result"
    subprocess.run([sys.executable, "-c", STDIO_CLOSED, method, str(result)], timeout=60, check=True)
    text = result.read_text()
    assert text.startswith("0 ") and "50 200" in text and "/dev/pts/" in text, text


def _children() -> set[int]:
    me = os.getpid()
    out = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _proc_stat(name)
            if fields is not None and len(fields) > 1 and int(fields[1]) == me:
                out.add(int(name))
    return out


def _group(pid: int | str) -> tuple[str, int] | None:
    """(autogroup, its nice) of a process, None on a kernel without autogroup or for a process whose
    scheduling group is not an autogroup (the file reads empty, as in a container with its own cgroup)."""
    try:
        name, _, value = Path(f"/proc/{pid}/autogroup").read_text().split()
    except (OSError, ValueError):
        return None
    return name, int(value)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("transport", ["pty", "pipes"])
def test_nice_puts_the_child_and_its_session_group_below_the_spawner(method: str, transport: str) -> None:
    own, own_group = os.getpriority(os.PRIO_PROCESS, 0), _group("self")
    e = _env()
    low = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", transport, method=method, nice=7)
    plain = spawn([resolve("sleep", e) or "sleep", "30"], e, "/tmp", transport, method=method)
    try:
        assert os.getpriority(os.PRIO_PROCESS, low.pid) == min(19, own + 7)
        assert os.getpriority(os.PRIO_PROCESS, plain.pid) == own, "nice=0 leaves the child as it was"
        if own_group is not None:  # Linux with autogroup: the child's session group is what competes
            group = _group(low.pid)
            assert group is not None and group[0] != own_group[0] and group[1] == min(19, own_group[1] + 7)
            assert _group(plain.pid) is not None and _group(plain.pid)[1] == 0  # type: ignore[index]
            assert _group("self") == own_group, "the spawner's own group was not touched"
    finally:
        for p in (low, plain):
            os.kill(p.pid, signal.SIGKILL)
            os.waitpid(p.pid, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the compiled spawner is Linux's")
@pytest.mark.parametrize("transport", ["pty", "pipes"])
def test_the_vfork_path_lowers_the_child_before_it_runs_its_own_code(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first thing the program reads of itself is already the lowered nice (and group): a burst of starting
    CLIs never runs at the daemon's priority, not even until the parent gets the pid back."""
    import litbridge.pty as pty_module

    def late(pid: int, nice: int) -> tuple[int, None]:
        raise AssertionError("the vfork path lowered the child after the fact")

    monkeypatch.setattr(pty_module, "lower_priority", late)
    out = tmp_path / "self.txt"
    e = _env()
    script = f"cat /proc/self/stat /proc/self/autogroup > {out} 2>/dev/null; exec sleep 30"
    p = spawn([resolve("sh", e) or "sh", "-c", script], e, "/tmp", transport, method="vfork", nice=7)
    try:
        deadline = time.monotonic() + 10
        while not (out.exists() and out.read_text().count("\n") >= 1) and time.monotonic() < deadline:
            time.sleep(0.02)
        lines = out.read_text().splitlines()
        nice = int(lines[0].rsplit(")", 1)[1].split()[16])  # field 19 of stat: the nice value
        value, group = pty_module.priority_for(7)
        assert nice == value == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)
        if group is not None and len(lines) > 1 and lines[1].strip():  # autogroup here
            name, _, group_nice = lines[1].split()
            assert int(group_nice) == group and name != _group("self")[0]  # type: ignore[index]
    finally:
        os.kill(p.pid, signal.SIGKILL)
        os.waitpid(p.pid, 0)


def test_a_process_sharing_the_daemons_session_group_keeps_that_group_as_it_is() -> None:
    """`lower_priority` on a process that is not a session leader lowers the process only: writing the group's
    nice would have lowered the daemon with it."""
    from litbridge.pty import lower_priority

    own_group = _group("self")
    p = subprocess.Popen(["sleep", "30"])  # same session (and autogroup) as this test
    try:
        value, group = lower_priority(p.pid, 5)
        assert (
            value == os.getpriority(os.PRIO_PROCESS, p.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
        )
        assert group is None
        assert _group("self") == own_group
    finally:
        p.kill()
        p.wait()


def test_a_session_group_that_is_not_an_autogroup_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a container whose cgroup has its own CPU group, `/proc/<pid>/autogroup` exists but reads empty: the
    process is lowered, no group is written, nothing raises."""
    import io

    import litbridge.pty as pty_module

    opened: list[tuple[str, str]] = []

    def fake_open(path: str, mode: str = "r") -> io.StringIO:
        opened.append((path, mode))
        return io.StringIO("")

    monkeypatch.setattr(pty_module, "open", fake_open, raising=False)
    p = subprocess.Popen(["sleep", "30"])
    try:
        value, group = pty_module.lower_priority(p.pid, 3)
        assert (
            value == os.getpriority(os.PRIO_PROCESS, p.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)
        )
        assert group is None
        assert opened and all(mode == "r" for _, mode in opened), "nothing was written"
    finally:
        p.kill()
        p.wait()


def test_the_spawners_fallback_closes_every_listed_fd_even_far_past_1024() -> None:
    """On a kernel without `close_range` the vfork child closes what /proc/self/fd lists (not a million close()
    calls up to the daemon's raised open-file limit): fds far past 1024 go too, and 0-2 stay. Run in a forked
    child, reported by its exit status."""
    from litbridge.pty import _spawn

    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
    high = os.dup2(opened[0], 1500, inheritable=False)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                if _spawn.close_listed() != 0:
                    code |= 1
                for fd in (*opened, high):
                    try:
                        os.fstat(fd)
                        code |= 2  # still open
                    except OSError:
                        pass
                for fd in (0, 1, 2):
                    try:
                        os.fstat(fd)
                    except OSError:
                        code |= 4
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, {1: "/proc/self/fd unread", 2: "an fd stayed open"}
    finally:
        for fd in (*opened, high):
            os.close(fd)


def test_a_pty_drained_at_exit_reads_past_fd_1024() -> None:
    """The exit drain asks whether a PTY has bytes left with `poll`: `select` refuses descriptors past 1024, and
    a daemon with hundreds of sessions has its PTYs there (the CLI's last words were dropped)."""
    from litbridge.pty.unix import _readable

    r, w = os.pipe()
    high = os.dup2(r, 1500, inheritable=False)
    try:
        assert not _readable(high)
        os.write(w, b"x")
        assert _readable(high)
    finally:
        for fd in (r, w, high):
            os.close(fd)
