"""PTY and pipes hosts: 200x50, env rules, event-driven output, exit noticed at once, group kill + reaping."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest
from lbd_helpers import pid_alive as alive

from litbridge.pty import child_env, daemon_env, resolve, spawn
from litbridge.pty.base import SpawnError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix PTY host")


def test_child_env_rules() -> None:
    base = {
        "PATH": "/bin",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "CLAUDE_CONFIG_DIR": "/c",
        "TERM": "dumb",
    }
    remove = ("CLAUDECODE", "CLAUDE_CODE_*")  # what the Claude driver's launch spec asks for
    env = child_env(
        {"TERM": "screen"}, {"CLAUDE_CODE_X": "mine", "COLORTERM": "no"}, base=base, remove=remove
    )
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_ENTRYPOINT" not in env
    assert env["CLAUDE_CONFIG_DIR"] == "/c", "only the nesting vars are stripped"
    assert env["CLAUDE_CODE_X"] == "mine", "explicitly passed vars are kept"
    assert env["TERM"] == "screen" and env["COLORTERM"] == "no", "driver then caller env win over defaults"
    env = child_env(base=base)
    assert env["TERM"] == "xterm-256color" and env["COLORTERM"] == "truecolor"
    assert env["CLAUDECODE"] == "1", "no driver asked: nothing CLI-specific is stripped in pty/"


def test_the_daemons_environment_is_read_anew_after_every_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """`child_env` starts from a decoded copy of `os.environ` kept between creates; a variable set, changed or
    removed since is in the next child's environment at once, as it was when every create decoded anew."""
    monkeypatch.delenv("LB_TEST_ENV", raising=False)
    first = daemon_env()
    assert daemon_env() is first, "unchanged: the same copy"
    assert first == dict(os.environ)
    monkeypatch.setenv("LB_TEST_ENV", "one")
    assert child_env()["LB_TEST_ENV"] == "one"
    monkeypatch.setenv("LB_TEST_ENV", "two")
    assert child_env()["LB_TEST_ENV"] == "two"
    monkeypatch.delenv("LB_TEST_ENV")
    assert "LB_TEST_ENV" not in child_env()
    assert daemon_env() == dict(os.environ)


def test_resolve() -> None:
    env = {"PATH": os.defpath + ":/usr/bin:/bin"}
    assert resolve("sh", env) is not None
    assert resolve("no-such-program-xyz", env) is None
    assert resolve(sys.executable, {}) == sys.executable
    assert resolve("/nonexistent/prog", env) is None


async def run_child(argv: list[str], transport: str = "pty", **kw: object) -> tuple[int | None, bytes, bytes]:
    env = child_env(base={"PATH": os.environ["PATH"]}, caller_env=kw.get("env") or {})  # type: ignore[arg-type]
    p = spawn([resolve(argv[0], env) or argv[0], *argv[1:]], env, "/tmp", transport)
    loop = asyncio.get_running_loop()
    out, err = bytearray(), bytearray()
    done: asyncio.Future[int | None] = loop.create_future()
    p.start(loop, out.extend, done.set_result, err.extend)
    code = await asyncio.wait_for(done, 20)
    return code, bytes(out), bytes(err)


@pytest.mark.asyncio
async def test_pty_size_term_and_exit_code() -> None:
    code, out, _ = await run_child(["sh", "-c", "stty size; echo $TERM $COLORTERM; exit 5"])
    assert code == 5
    assert b"50 200" in out and b"xterm-256color truecolor" in out


@pytest.mark.asyncio
async def test_output_drained_before_exit_report() -> None:
    code, out, _ = await run_child(
        ["sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"]
    )
    assert code == 0 and b"line1999" in out


@pytest.mark.asyncio
async def test_signal_exit_code() -> None:
    code, _, _ = await run_child(["sh", "-c", "kill -TERM $$"])
    assert code == -15


@pytest.mark.asyncio
async def test_pipes_transport() -> None:
    code, out, err = await run_child(
        ["sh", "-c", "echo out; echo err >&2; [ -t 0 ] || echo notty; exit 2"], "pipes"
    )
    assert code == 2 and out == b"out\nnotty\n" and err == b"err\n"


@pytest.mark.asyncio
async def test_pipes_write_and_own_group() -> None:
    env = child_env(base={"PATH": os.environ["PATH"]})
    p = spawn([resolve("cat", env) or "cat"], env, "/tmp", "pipes")
    loop = asyncio.get_running_loop()
    out = bytearray()
    got = asyncio.Event()
    p.start(loop, lambda b: (out.extend(b), got.set()), lambda c: None)
    assert os.getpgid(p.pid) == p.pid != os.getpgid(0)
    p.write(b"ping\n")
    await asyncio.wait_for(got.wait(), 10)
    assert out == b"ping\n"
    await p.kill(grace=2)
    assert not alive(p.pid)


@pytest.mark.asyncio
async def test_kill_reaps_whole_group_and_escalates() -> None:
    env = child_env(base={"PATH": os.environ["PATH"]})
    # ignores TERM and HUP: needs the SIGKILL escalation; its background sleep must die too
    script = "trap '' TERM HUP; sleep 300 & echo child $!; while :; do sleep 1; done"
    p = spawn([resolve("sh", env) or "sh", "-c", script], env, "/tmp")
    loop = asyncio.get_running_loop()
    out = bytearray()
    seen = asyncio.Event()

    def on_out(b: bytes) -> None:
        out.extend(b)
        if b"child " in out and out.endswith(b"\n"):
            seen.set()

    p.start(loop, on_out, lambda c: None)
    await asyncio.wait_for(seen.wait(), 10)
    child = int(out.split(b"child ")[1].split()[0])
    assert os.getpgid(p.pid) == p.pid and os.getpgid(child) == p.pid
    code = await p.kill(grace=0.3)
    assert code == -9
    assert not alive(p.pid)
    for _ in range(100):
        if not alive(child):
            break
        await asyncio.sleep(0.02)
    assert not alive(child)
    p.write(b"ignored after death")  # never raises


@pytest.mark.asyncio
async def test_write_is_non_blocking_for_large_input() -> None:
    """1 MiB into a child that reads slowly must not block the loop (queued + add_writer)."""
    env = child_env(base={"PATH": os.environ["PATH"]})
    p = spawn([resolve("sh", env) or "sh", "-c", "sleep 0.5; cat > /dev/null"], env, "/tmp", "pipes")
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int | None] = loop.create_future()
    p.start(loop, lambda b: None, done.set_result)
    p.write(b"x" * (1024 * 1024))
    assert p._wbuf, "the rest is queued (the pipe holds far less than 1 MiB), not written blockingly"
    tick = loop.create_future()
    loop.call_later(0.05, tick.set_result, None)
    await asyncio.wait_for(tick, 5)  # the loop keeps running
    await p.kill(grace=1)


def test_spawn_errors() -> None:
    with pytest.raises(SpawnError):
        spawn(["/bin/sh"], {}, "/nonexistent-dir-xyz")


@pytest.mark.asyncio
async def test_pipes_close_stdin_after_queued_writes() -> None:
    env = child_env(base={"PATH": os.environ["PATH"]})
    p = spawn([resolve("cat", env) or "cat"], env, "/tmp", "pipes")
    loop = asyncio.get_running_loop()
    out = bytearray()
    done: asyncio.Future[int | None] = loop.create_future()
    p.start(loop, out.extend, done.set_result)
    p.write(b"a" * 300_000)  # more than a pipe holds: some of it is still queued
    p.close_stdin()
    p.write(b"dropped")  # after close_stdin nothing more is written
    assert await asyncio.wait_for(done, 20) == 0, "cat saw EOF and exited by itself"
    assert bytes(out) == b"a" * 300_000


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["/bin/cat", "a\0b"], {}),
        (["/bin/cat"], {"A": "x\0y"}),
        (["/bin/cat"], {"A=B": "1"}),
        (["/bin/cat"], {"": "1"}),
    ],
)
def test_unexecutable_args_refused_before_fork(argv: list[str], env: dict[str, str]) -> None:
    with pytest.raises(SpawnError):
        spawn(argv, env, "/tmp")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux /proc")
@pytest.mark.asyncio
async def test_stopped_follows_sigstop_through_one_kept_descriptor() -> None:
    env = child_env(base={"PATH": os.environ["PATH"]})
    p = spawn([resolve("sleep", env) or "sleep", "60"], env, "/tmp")
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int | None] = loop.create_future()
    p.start(loop, lambda b: None, done.set_result)

    def fds() -> dict[str, str]:
        out = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                out[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # the listing's own descriptor, closed by now
                pass
        return out

    assert not p.stopped
    kept = fds()
    os.kill(p.pid, signal.SIGSTOP)
    for _ in range(250):  # the stop lands asynchronously
        if p.stopped:
            break
        await asyncio.sleep(0.02)
    assert p.stopped
    assert fds() == kept  # asked again and again: no descriptor opened per question
    os.kill(p.pid, signal.SIGCONT)
    for _ in range(250):
        if not p.stopped:
            break
        await asyncio.sleep(0.02)
    assert not p.stopped
    stat_fds = {fd for fd, target in kept.items() if target == f"/proc/{p.pid}/stat"}
    assert len(stat_fds) == 1, kept
    await p.kill(grace=0.3)
    await asyncio.wait_for(done, 10)
    assert not p.stopped  # exited: not stopped, and the descriptor is gone with it
    assert f"/proc/{p.pid}/stat" not in fds().values()
