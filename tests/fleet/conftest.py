"""Fixtures for the fleet tests: a real `nats-server -js` (JetStream on file storage) and daemons joined to it.

`nats_server` can be stopped and started again on the same port and store (history survives, as in production);
a test module overrides `nats_config` (configuration text, e.g. accounts and a `tls {}` block) and `nats_env` (the
server's environment: config variables such as passwords). `tls_files` is a throwaway CA and a server certificate
for 127.0.0.1. `fleet_daemons(n, ...)` starts n `litbridge serve --nats` daemons named d0..d{n-1} (tests/daemon/
lbd_helpers start_daemon), returns once each has joined (subscribed to its command subject), and stops them all
at teardown. Every event the fleet client decodes in any of these tests is checked against the schema
(`checked_events`).
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
from _daemon import checked_decode
from fleet_helpers import TlsFiles
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

    def __init__(
        self,
        binary: str,
        store: Path,
        port: int,
        config: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.binary, self.store, self.port = binary, store, port
        self.env = {**os.environ, **env} if env else None
        self.url = f"nats://127.0.0.1:{port}"
        self.log_path = store.parent / f"nats-server-{port}.log"
        self.flags = ["-js", "-sd", str(store)]
        if config is not None:  # server options the command line lacks (max_payload, accounts, tls)
            conf = store.parent / f"nats-server-{port}.conf"
            conf.write_text(config)
            # nats-server refuses a store_dir given twice: a config naming one (it must be `store`) keeps it
            self.flags = ["-c", str(conf), *(["-js"] if "store_dir" in config else self.flags)]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    *self.flags,
                    "-a",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
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


@pytest.fixture(autouse=True)
def checked_events() -> Iterator[None]:
    """Every event the fleet client decodes (reply arrays and stream messages) validates against the schema;
    collected and reported at the end (raising inside a NATS callback would look like a lost message)."""
    from litbridge.fleet import client as fleet_client  # nats-py: the fleet extra, imported when a test runs

    violations: list[str] = []
    with checked_decode(fleet_client, violations):
        yield
    assert not violations, "events that violate `litbridge schema`:\n" + "\n".join(violations[:10])


@pytest.fixture
def nats_config() -> str | None:
    """nats-server configuration text for `nats_server` (override in a test module or by parametrizing)."""
    return None


@pytest.fixture
def nats_env() -> dict[str, str] | None:
    """Variables for the server's environment (a config's `$NAME` references resolve from it)."""
    return None


@pytest.fixture
def tls_files(tmp_path: Path) -> TlsFiles:
    """Made with `cryptography` for each test (an EC key is instant); nothing outside tmp_path trusts the CA."""
    import datetime
    import ipaddress

    x509 = pytest.importorskip(
        "cryptography.x509", reason="the TLS tests need cryptography (pip install --group test)"
    )
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("litbridge test CA"))
        .issuer_name(name("litbridge test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    out = TlsFiles(tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server-key.pem")
    out.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    out.key.chmod(0o600)
    return out


@pytest.fixture
def nats_server(
    tmp_path: Path, nats_config: str | None, nats_env: dict[str, str] | None
) -> Iterator[NatsServer]:
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip("no nats-server (tests/fetch_fixtures.py installs Debian's nats-server)")
    server = NatsServer(binary, tmp_path / "jetstream", _free_port(), nats_config, nats_env)
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
        url: Callable[[str], str] | None = None,
    ) -> list[FleetDaemon]:
        """`url(name)`: the NATS URL daemon `name` joins with (e.g. with its user and password; default the
        server's)."""
        full_env = {"LITBRIDGE_FLEET_TTL": TEST_TTL, **(env or {})}
        out = []
        for i in range(n):
            name = names[i] if names else f"d{len(started)}"
            flags = ["--nats", url(name) if url else nats_server.url, "--daemon-id", name, *extra]
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
