"""Fleet connection settings shared by the daemon and the client: URL, credentials, TLS, names, limits.

`FleetConfig.connect_kwargs()` turns them into `nats.connect(...)` arguments and `first_connect` makes the
first connection, bounded; `is_tls(nc)` says whether a live connection is encrypted (`create.env` is refused over
plaintext unless allowed explicitly).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from litbridge.fleet import subjects

DEFAULT_MAX_AGE = 7 * 24 * 3600.0  # seconds of history the stream keeps
DEFAULT_MAX_BYTES = 1 << 30  # bytes of history the stream keeps
DUPLICATE_WINDOW = 120.0  # seconds JetStream remembers a Nats-Msg-Id
# Seconds after its last re-put that a daemon's registry entry means "gone" (daemons re-put every TTL/3 and
# write both figures into their entry as `ttl` and `heartbeat`). 10, so that a killed daemon is seen as gone
# within 15 s: at most TTL after its last re-put, plus the time a client takes to read the registry.
# Environment knob for tests only.
REGISTRY_TTL = float(os.environ.get("LITBRIDGE_FLEET_TTL", "10"))
# The KV bucket's max_age: entries of a daemon that died without cleaning up stay this long (its sessions stay
# listed, unavailable), then go. Live entries are re-put every TTL/3, so they never reach it.
REGISTRY_KEEP = 24 * 3600.0
CONNECT_TIMEOUT = 5.0  # seconds for one server's TCP + TLS + CONNECT


class FleetConfigError(ValueError):
    """A bad fleet option (said to the user as is)."""


def default_daemon_name(socket_path: str) -> str:
    """hostname + "-" + 6 hex of the socket path: stable across restarts, distinct per daemon on a host."""
    import hashlib

    host = "".join(c if c.isalnum() or c in "_-" else "-" for c in socket.gethostname().split(".")[0])
    digest = hashlib.sha256(os.path.abspath(socket_path).encode()).hexdigest()[:6]
    return f"{(host or 'host')[:40]}-{digest}"


def parse_labels(items: list[str] | None) -> dict[str, str]:
    """`k=v` strings -> {k: v} (a daemon's placement labels)."""
    labels: dict[str, str] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise FleetConfigError(f"--label {item!r}: expected KEY=VALUE")
        labels[k.strip()] = v.strip()
    return labels


@dataclass
class FleetConfig:
    url: str
    fleet: str = subjects.DEFAULT_FLEET
    daemon: str | None = None  # daemon side only; None -> default_daemon_name()
    creds: str | None = None  # a .creds file (JWT + NKey seed)
    token: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # the stream's limits; None: the defaults for a stream this daemon creates, and an existing one is left as is
    max_age: float | None = None
    max_bytes: int | None = None
    allow_plaintext_env: bool = False

    def __post_init__(self) -> None:
        try:
            subjects.check_name(self.fleet, "fleet name")
            if self.daemon is not None:
                subjects.check_name(self.daemon, "daemon name")
        except ValueError as exc:
            raise FleetConfigError(str(exc)) from None
        for url in self.servers():
            if urlsplit(url).scheme not in ("nats", "tls", "ws", "wss"):
                raise FleetConfigError(f"NATS URL {url!r}: expected nats://, tls://, ws:// or wss://")
        if self.creds and self.token:
            raise FleetConfigError("give either --nats-creds or --nats-token, not both")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise FleetConfigError("--nats-tls-cert and --nats-tls-key go together")
        for path in (self.creds, self.tls_ca, self.tls_cert, self.tls_key):
            if path and not os.path.isfile(path):
                raise FleetConfigError(f"{path}: no such file")
        if (self.max_age is not None and self.max_age <= 0) or (
            self.max_bytes is not None and self.max_bytes <= 0
        ):
            raise FleetConfigError("--nats-max-age and --nats-max-bytes must be positive")

    def servers(self) -> list[str]:
        return [u.strip() for u in self.url.split(",") if u.strip()]

    @property
    def wants_tls(self) -> bool:
        return bool(self.tls_ca or self.tls_cert) or any(
            urlsplit(u).scheme in ("tls", "wss") for u in self.servers()
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.wants_tls:
            return None
        ctx = ssl.create_default_context(cafile=self.tls_ca)
        if self.tls_cert:
            ctx.load_cert_chain(self.tls_cert, self.tls_key)
        return ctx

    def connect_wait(self) -> float:
        """Seconds a first connection may take before it counts as failed (`first_connect`): connect_timeout per
        server + 5."""
        return CONNECT_TIMEOUT * len(self.servers()) + 5.0

    def connect_kwargs(self, name: str) -> dict[str, Any]:
        """Arguments for `nats.connect`: reconnect forever (an outage never ends the link), no secrets logged."""
        kw: dict[str, Any] = {
            "servers": self.servers(),
            "name": name,
            "allow_reconnect": True,
            "max_reconnect_attempts": -1,
            "reconnect_time_wait": 1,
            "connect_timeout": CONNECT_TIMEOUT,
        }
        if self.creds:
            kw["user_credentials"] = self.creds
        if self.token:
            kw["token"] = self.token
        ctx = self.ssl_context()
        if ctx is not None:
            kw["tls"] = ctx
        return kw


async def first_connect(
    nats: Any, kwargs: dict[str, Any], wait: float, error_cb: Callable[[Exception], Awaitable[None]]
) -> Any:
    """`nats.connect(**kwargs)` that ends with the error of its first failed round instead of retrying.

    nats-py retries a first connection as it would a lost one (for ever, for a daemon), telling only `error_cb`
    why each attempt failed: a refused port, an untrusted TLS certificate, a refused password would each show
    as a hang. Here, once every server has failed once, the last error is raised (the caller decides whether to
    try again). A server that takes the connection but never answers is `asyncio.TimeoutError` after `wait` s.
    """
    failed: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()
    servers = kwargs.get("servers")
    rounds = len(servers) if isinstance(servers, list) else 1
    errors = 0

    async def on_error(exc: Exception) -> None:
        nonlocal errors
        errors += 1
        if errors >= rounds and not failed.done():
            failed.set_result(exc)
        await error_cb(exc)

    connecting = asyncio.ensure_future(nats.connect(**kwargs, error_cb=on_error))
    await asyncio.wait({connecting, failed}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
    if connecting.done():
        return connecting.result()
    connecting.cancel()
    with contextlib.suppress(BaseException):
        await connecting
    if failed.done():
        raise failed.result()
    raise asyncio.TimeoutError


def is_tls(nc: Any) -> bool:
    """Whether the live connection `nc` (a nats.aio.client.Client) runs over TLS."""
    transport = getattr(nc, "_transport", None)
    writer = getattr(transport, "_io_writer", None) or getattr(transport, "_bare_io_writer", None)
    if writer is not None:
        with_ssl = writer.get_extra_info("ssl_object") is not None
        if with_ssl:
            return True
    url = getattr(nc, "connected_url", None)
    return url is not None and url.scheme in ("tls", "wss")


def add_arguments(p: Any, daemon: bool = False) -> None:
    """The `--nats …` options (one place for `serve` and the client subcommands); `daemon` adds the
    daemon-only ones (--daemon-id, --label, retention, --nats-allow-plaintext-env)."""
    g = p.add_argument_group("fleet (NATS)")
    g.add_argument("--nats", metavar="URL", help="NATS server URL(s), comma-separated (nats://, tls://)")
    g.add_argument(
        "--fleet", default=subjects.DEFAULT_FLEET, metavar="NAME", help="fleet name (default %(default)s)"
    )
    g.add_argument("--nats-creds", metavar="FILE", help="NATS credentials file (JWT + NKey seed)")
    g.add_argument("--nats-token", metavar="TOKEN", help="NATS auth token (prefer $LITBRIDGE_NATS_TOKEN)")
    g.add_argument("--nats-tls-ca", metavar="FILE", help="CA bundle to verify the NATS server")
    g.add_argument("--nats-tls-cert", metavar="FILE", help="client certificate (with --nats-tls-key)")
    g.add_argument("--nats-tls-key", metavar="FILE", help="client certificate's key")
    if not daemon:
        return
    g.add_argument(
        "--daemon-id",
        metavar="ID",
        help="this daemon's name in the fleet (default: hostname-<hash of the socket path>)",
    )
    g.add_argument("--label", action="append", default=[], metavar="K=V", help="placement label (repeatable)")
    g.add_argument(
        "--nats-max-age",
        type=float,
        metavar="SECONDS",
        help="event history the stream keeps (set on an existing stream too; default for a new one: 7 days)",
    )
    g.add_argument(
        "--nats-max-bytes",
        type=int,
        metavar="BYTES",
        help="event history bytes the stream keeps (set on an existing stream too; default for a new one: 1 GiB)",
    )
    g.add_argument(
        "--nats-allow-plaintext-env",
        action="store_true",
        help="accept create.env over a NATS connection without TLS (refused by default)",
    )


def from_args(args: Any) -> FleetConfig | None:
    """The FleetConfig of parsed `add_arguments` options, None without --nats. Raises FleetConfigError."""
    if not getattr(args, "nats", None):
        return None
    return FleetConfig(
        url=args.nats,
        fleet=args.fleet,
        daemon=getattr(args, "daemon_id", None),
        creds=args.nats_creds,
        token=args.nats_token or os.environ.get("LITBRIDGE_NATS_TOKEN") or None,
        tls_ca=args.nats_tls_ca,
        tls_cert=args.nats_tls_cert,
        tls_key=args.nats_tls_key,
        labels=parse_labels(getattr(args, "label", None)),
        max_age=getattr(args, "nats_max_age", None),
        max_bytes=getattr(args, "nats_max_bytes", None),
        allow_plaintext_env=getattr(args, "nats_allow_plaintext_env", False),
    )
