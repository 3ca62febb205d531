"""Helpers for the daemon benchmarks: a real `litbridge serve` subprocess, a raw socket client that stamps
every received event with time.monotonic(), /proc CPU and RSS readers, and the fake CLIs' launchers.

It measures nothing by itself and asserts nothing; `bench_daemon.py` decides what to time.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fetch_fixtures import CAPTURES

ROOT = Path(__file__).resolve().parent.parent
REPLAY_CLI = ROOT / "tests" / "fakes" / "replay_cli.py"

CLK_TCK = os.sysconf("SC_CLK_TCK")
# Recordings whose keys are plain typed prompts + Enter (no dialogs): the replay can be driven by `send`.
REPLAYABLE = (
    "s08a_first_session",
    "s02_simple_qa",
    "s03_long_markdown_response",
    "s02b_simple_qa_classic_tui",
)


# ---------------------------------------------------------------------------------------------- /proc


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (field 3, `state`, is index 0)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` (its own threads, not its children), in seconds."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def kernel_side(pid: int) -> tuple[float, int]:
    """(stime in seconds, minor page faults) of `pid`: the kernel's part of its CPU, and how often a page of its
    memory had to be mapped in (mostly new memory touched for the first time, which the kernel zeroes)."""
    fields = _stat(pid)
    return int(fields[12]) / CLK_TCK, int(fields[7])


def reaped_children_cpu_seconds(pid: int) -> float:
    """cutime + cstime of `pid`: what its children (and theirs) used, once it reaped them (waitpid)."""
    fields = _stat(pid)
    return (int(fields[13]) + int(fields[14])) / CLK_TCK


MACHINE_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
"""The first eight columns of /proc/stat's `cpu` line (clock ticks summed over every CPU)."""


def machine_seconds() -> dict[str, float] | None:
    """The whole machine's CPU time by kind, in seconds summed over every CPU (/proc/stat's `cpu` line; `nice` is
    the user time of processes with a positive nice value, such as CLIs started with `serve --cli-nice`), or None
    where there is no /proc/stat. A window's delta says whether the machine had CPU to spare, and who had it."""
    try:
        with open("/proc/stat", "rb") as fh:
            line = fh.readline().split()
    except OSError:
        return None
    if not line or line[0] != b"cpu" or len(line) < 1 + len(MACHINE_FIELDS):
        return None
    return {k: int(v) / CLK_TCK for k, v in zip(MACHINE_FIELDS, line[1:], strict=False)}


def machine_split(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    """Between two `machine_seconds()`: each kind's share of all the CPUs' time (%), plus `busy` (all but idle,
    iowait and steal), `kernel` (system, irq, softirq), `cpus` and `seconds` (CPU seconds elapsed, all CPUs);
    None without both or when no time passed."""
    if before is None or after is None:
        return None
    delta = {k: after[k] - before[k] for k in MACHINE_FIELDS}
    total = sum(delta.values())
    if total <= 0:
        return None
    pct = {k: 100 * v / total for k, v in delta.items()}
    pct["busy"] = 100 - pct["idle"] - pct["iowait"] - pct["steal"]
    pct["kernel"] = pct["system"] + pct["irq"] + pct["softirq"]
    pct["cpus"] = float(os.cpu_count() or 1)
    pct["seconds"] = total
    return pct


def runq_wait_seconds(pid: int) -> float:
    """Time `pid`'s threads spent runnable but waiting for a CPU (/proc/<pid>/schedstat, 2nd field)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[1])
        except OSError:
            continue
    return total / 1e9


def child_pids(pid: int) -> list[int]:
    """The live children of every thread of `pid` (a child forked from a worker thread is listed under that
    thread's /proc/<pid>/task/<tid>/children, not the main thread's); by parent pid where that file is missing."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            kids += [int(k) for k in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN, or the thread just ended
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue
            return _child_pids_by_ppid(pid)
        except (OSError, ValueError):
            continue
    return kids


def _child_pids_by_ppid(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if int(_stat(int(name))[1]) == pid:
                    out.append(int(name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def descendants(pid: int) -> list[int]:
    """Every live process under `pid` (children, grandchildren, ...), found through every thread's children."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = child_pids(todo.pop())
        out += kids
        todo += kids
    return out


def children_cpu_seconds(pid: int) -> float:
    """CPU seconds (utime + stime) of everything `pid` ever started: its live descendants (with what each of them
    reaped), plus the children it already reaped (its cutime + cstime). A window's delta of this is the fake CLIs'
    CPU, sessions that ended inside the window included. Read again when a child was reaped mid-read (it would
    be counted twice or not at all)."""
    for _ in range(5):
        reaped = reaped_children_cpu_seconds(pid)
        live = 0.0
        for k in descendants(pid):
            try:
                f = _stat(k)
            except (OSError, ValueError):
                continue  # gone since it was listed: its time is in its parent's cutime now
            live += sum(int(x) for x in f[11:15]) / CLK_TCK
        if reaped_children_cpu_seconds(pid) == reaped:
            return reaped + live
    return reaped + live


def mem_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of `pid`, in KiB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0])
    return out


class Sampler:
    """Samples the daemon's RSS every `period` s in a thread (the peak within a window is what counts)."""

    def __init__(self, pid: int, period: float = 0.25) -> None:
        self.pid, self.period = pid, period
        self.rss: list[int] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.rss.append(mem_kb(self.pid)["VmRSS"])
            except OSError:
                return

    def __enter__(self) -> Sampler:
        self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._t.join(2)


# ---------------------------------------------------------------------------------------------- client


@dataclass
class Received:
    at: float  # time.monotonic() when the bytes carrying the event were read
    ev: dict[str, Any]
    size: int = 0  # bytes of its line on the wire (newline included)


class Conn:
    """A control connection: a reader thread stamps and parses every line; commands are written as-is."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.events: queue.Queue[Received] = queue.Queue()
        self._ids = iter(range(1, 1 << 62))
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                return
            now = time.monotonic()
            if not data:
                return
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line:
                    self.events.put(Received(now, orjson.loads(line), len(line) + 1))

    def cmd(self, cmd: str, **fields: Any) -> int:
        rid = next(self._ids)
        self.sock.sendall(orjson.dumps({"cmd": cmd, "id": rid, **fields}) + b"\n")
        return rid

    def wait(
        self,
        pred: Callable[[dict[str, Any]], bool],
        timeout: float = 60.0,
        sink: list[Received] | None = None,
    ) -> Received:
        """Next event matching `pred`; every event read meanwhile is appended to `sink`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching event within {timeout:.0f}s")
            r = self.events.get(timeout=left)
            if sink is not None:
                sink.append(r)
            if pred(r.ev):
                return r

    def drain(self, sink: list[Received] | None = None) -> None:
        while True:
            try:
                r = self.events.get_nowait()
            except queue.Empty:
                return
            if sink is not None:
                sink.append(r)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------- daemon


@dataclass
class DaemonProc:
    proc: subprocess.Popen[bytes]
    socket: str
    tmp: Path
    home: Path
    bin: Path
    logs: Path
    conns: list[Conn] = field(default_factory=list)
    daemon_pid: int | None = None  # set when the daemon runs under a wrapper (e.g. py-spy record)

    @property
    def pid(self) -> int:
        return self.daemon_pid or self.proc.pid

    def connect(self) -> Conn:
        c = Conn(self.socket)
        c.wait(lambda e: e.get("event") == "monitor_ready", 10)
        self.conns.append(c)
        return c

    def claude_create(self, name: str, capture: str, speed: float = 1.0) -> dict[str, Any]:
        """The `create` fields of a Claude-driver session whose CLI replays `capture` (log in logs/<name>)."""
        cwd = self.tmp / "work" / name
        cwd.mkdir(parents=True, exist_ok=True)
        return {
            "session": name,
            "cli": str(self.bin / "claude"),
            "args": [
                "--capture",
                str(CAPTURES / capture),
                "--speed",
                str(speed),
                "--log",
                str(self.logs / name),
            ],
            "working_dir": str(cwd),
            "env": {"HOME": str(self.home)},
        }

    def tick_create(self, name: str, ticks: int, interval: float, quiescence: float) -> dict[str, Any]:
        """A generic-driver session whose CLI answers each line with `ticks` timestamped lines."""
        return {
            "session": name,
            "cli": str(self.bin / "tickcli"),
            "args": ["--ticks", str(ticks), "--interval", str(interval), "--log", str(self.logs / name)],
            "working_dir": str(self.tmp),
            "quiescence": quiescence,
        }


def read_log(path: Path) -> list[dict[str, Any]]:
    try:
        return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    except OSError:
        return []


@contextmanager
def daemon(extra_env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Iterator[DaemonProc]:
    """A `python -m litbridge serve --socket <tmp>` subprocess (HOME in a temp dir), stopped with SIGTERM.

    $LITBRIDGE_BENCH_WRAP (e.g. "py-spy record -r 200 -f raw -o /tmp/prof.txt --") runs it under a wrapper;
    CPU and RSS are then read from the wrapper's child, the daemon itself. $LITBRIDGE_BENCH_PYTHON runs the
    daemon on another interpreter (another install of litbridge: A/B runs of two versions with one benchmark;
    the fake CLIs stay on this one). `args`: more `serve` flags.
    """
    tmp = Path(tempfile.mkdtemp(prefix="lbbench-"))
    home, bindir, logs = tmp / "home", tmp / "bin", tmp / "logs"
    for d in (home, bindir, logs):
        d.mkdir()
    py = sys.executable
    # The Claude driver is chosen by the executable's basename: a `claude` that execs the replaying fake.
    for name in ("claude", "tickcli"):
        script = bindir / name
        script.write_text(f'#!/bin/sh\nexec "{py}" -S "{REPLAY_CLI}" "$@"\n')
        script.chmod(0o755)
    sock = str(tmp / "d.sock")
    env = {**os.environ, **(extra_env or {})}
    env.pop("CLAUDECODE", None)
    err = open(tmp / "daemon.log", "wb")
    wrap = os.environ.get("LITBRIDGE_BENCH_WRAP", "").split()
    daemon_py = os.environ.get("LITBRIDGE_BENCH_PYTHON") or py
    proc = subprocess.Popen(
        [*wrap, daemon_py, "-m", "litbridge", "serve", "--socket", sock, "--log-level", "warning", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
        cwd=str(tmp),
    )
    d = DaemonProc(proc, sock, tmp, home, bindir, logs)
    try:
        deadline = time.monotonic() + 30
        while not _accepts(sock):  # the socket file exists a moment before listen()
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daemon did not start: {(tmp / 'daemon.log').read_text()[-2000:]}")
            time.sleep(0.02)
        if wrap:
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            d.daemon_pid = int(kids[0]) if kids else None
        yield d
    finally:
        for c in d.conns:
            c.close()
        if d.daemon_pid:
            os.kill(d.daemon_pid, signal.SIGTERM)  # the wrapper exits (and writes its output) after it
        else:
            proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()
        if os.environ.get("LITBRIDGE_BENCH_KEEP"):
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _accepts(path: str) -> bool:
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except OSError:
            return False
    return True


_PROMPTS: dict[str, list[str]] = {}


def prompts_of(capture: str) -> list[str]:
    """The prompts a recording's user typed, in order (a replay is driven by sending them, one per turn)."""
    if capture not in _PROMPTS:
        import replay_cli  # type: ignore[import-not-found]  # tests/fakes (pyproject's pythonpath)

        _, gates, _ = replay_cli.load_timeline(CAPTURES / capture)
        _PROMPTS[capture] = [g["text"] for g in gates if not g.get("hold")]
    return _PROMPTS[capture]


def need_captures() -> None:
    """Skip unless every REPLAYABLE recording is in the fixture cache."""
    import pytest

    missing = [c for c in REPLAYABLE if not (CAPTURES / c / "chunks.jsonl").exists()]
    if missing:
        pytest.skip(f"Claude recordings missing under {CAPTURES}: {missing}")


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) or None for no samples."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return s[k]
