"""Fixtures for the fleet tests: a real `nats-server -js` (JetStream on file storage) and daemons joined to it.

`nats_server` can be stopped and started again on the same port and store (history survives, as in production);
`fleet_daemons(n, ...)` starts n `litbridge serve --nats` daemons named d0..d{n-1} (tests/daemon/lbd_helpers
start_daemon), returns once each has joined (subscribed to its command subject), and stops them all at teardown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lbd_helpers import DaemonProc, start_daemon

pytest.importorskip("nats", reason="the fleet tests need nats-py (pip install --group test)")

# A daemon that stops renewing its registry entry is gone after this many seconds (product default 15).
TEST_TTL = "6"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """`nats-server -js -sd STORE -p PORT` on 127.0.0.1; stop() and start() keep port and store."""

    def __init__(self, binary: str, store: Path, port: int, config: str | None = None) -> None:
        self.binary, self.store, self.port = binary, store, port
        self.url = f"nats://127.0.0.1:{port}"
        self.log_path = store.parent / f"nats-server-{port}.log"
        self.flags = []
        if config is not None:  # server options the command line lacks (e.g. max_payload)
            conf = store.parent / f"nats-server-{port}.conf"
            conf.write_text(config)
            self.flags = ["-c", str(conf)]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    *self.flags,
                    "-js",
                    "-sd",
                    str(self.store),
                    "-a",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5):
                return
            time.sleep(0.05)
        raise RuntimeError(f"nats-server did not listen within {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


@pytest.fixture
def nats_config() -> str | None:
    """nats-server configuration text for `nats_server` (override in a test module or by parametrizing)."""
    return None


@pytest.fixture
def nats_server(tmp_path: Path, nats_config: str | None) -> Iterator[NatsServer]:
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip("no nats-server (tests/fetch_fixtures.py installs Debian's nats-server)")
    server = NatsServer(binary, tmp_path / "jetstream", _free_port(), nats_config)
    server.start()
    yield server
    server.stop()


@dataclass
class FleetDaemon:
    name: str
    proc_: DaemonProc
    env: dict[str, str] = field(default_factory=dict)

    @property
    def socket(self) -> str:
        return self.proc_.socket

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.proc_.proc

    def log(self) -> str:
        return self.proc_.log()

    def stop(self) -> int:
        return self.proc_.stop()

    def kill(self) -> None:
        """SIGKILL: the daemon dies without a word to NATS (its registry entry is left to age)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def _wait_joined(d: FleetDaemon, timeout: float = 30.0) -> None:
    """Until the daemon says it joined (its command subscription is up; it connects in the background)."""
    deadline = time.monotonic() + timeout
    while "fleet: connected" not in d.log():
        if d.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"daemon {d.name} did not join the fleet:\n{d.log()}")
        time.sleep(0.05)


@pytest.fixture
def fleet_daemons(nats_server: NatsServer) -> Iterator[Callable[..., list[FleetDaemon]]]:
    base = tempfile.mkdtemp(prefix="lbf-")  # short: AF_UNIX paths are limited to ~107 bytes
    started: list[FleetDaemon] = []

    def start(
        n: int,
        *extra: str,
        env: dict[str, str] | None = None,
        names: list[str] | None = None,
        allow_plaintext_env: bool = True,
    ) -> list[FleetDaemon]:
        full_env = {"LITBRIDGE_FLEET_TTL": TEST_TTL, **(env or {})}
        out = []
        for i in range(n):
            name = names[i] if names else f"d{len(started)}"
            flags = ["--nats", nats_server.url, "--daemon-id", name, *extra]
            if allow_plaintext_env:
                flags.append("--nats-allow-plaintext-env")
            d = FleetDaemon(
                name, start_daemon(os.path.join(base, f"{name}.sock"), *flags, env=full_env), full_env
            )
            started.append(d)
            out.append(d)
        for d in out:
            _wait_joined(d)
        return out

    yield start
    for d in started:
        d.stop()
    shutil.rmtree(base, ignore_errors=True)
