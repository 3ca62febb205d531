"""The TCP proof-first handshake: both ends prove they know the daemon's token without sending it.

Any local user can listen on a loopback port before the daemon does, so a TCP client must learn that its
peer is the daemon before it sends a token, a command or an `env`. The exchange (docs/protocol.md):

    client -> hello{id, auth:{nonce: Nc}}                      (no secret; nothing else yet)
    daemon -> auth_challenge{re, nonce: Nd, proof: server_proof(token, Nc, Nd, endpoint)}
    client checks the proof, then
    client -> hello{id, auth:{proof: client_proof(token, Nc, Nd, endpoint)}, subscribe?, since_seq?}
    daemon checks it -> monitor_ready, capabilities (as for a legacy hello{token})

Proofs are HMAC-SHA256 keyed with the token over a label (one per direction, so one side's proof is never
the other's), both nonces and the TCP endpoint the connection reached (`ip:port`, the daemon's local address
and the client's peer address): a listener relaying to a daemon elsewhere computes the wrong endpoint.
Both the daemon and the client import this module; it knows no sockets.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from typing import Any, TypeGuard

NONCE_BYTES = 32
"""Random bytes per nonce; on the wire as 2 x NONCE_BYTES lowercase hex digits."""

SERVER_LABEL = b"litbridge-server"
CLIENT_LABEL = b"litbridge-client"

_NONCE_RE = re.compile(rf"[0-9a-f]{{{2 * NONCE_BYTES}}}")


def new_nonce() -> str:
    """A fresh nonce (hex)."""
    return secrets.token_hex(NONCE_BYTES)


def valid_nonce(value: Any) -> TypeGuard[str]:
    """Whether `value` is a nonce of the agreed form (exactly 64 lowercase hex digits)."""
    return isinstance(value, str) and _NONCE_RE.fullmatch(value) is not None


def endpoint(address: Any) -> str:
    """`ip:port` of a socket address tuple, IPv4-mapped IPv6 shown as IPv4, so both ends spell it alike.

    >>> endpoint(("127.0.0.1", 7800)), endpoint(("::ffff:127.0.0.1", 7800, 0, 0)), endpoint(("::1", 80, 0, 0))
    ('127.0.0.1:7800', '127.0.0.1:7800', '[::1]:80')
    """
    if not isinstance(address, (tuple, list)) or len(address) < 2:
        return str(address)
    host, port = str(address[0]), address[1]
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}:{port}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def _proof(label: bytes, token: str, client_nonce: str, daemon_nonce: str, where: str) -> str:
    msg = b"\n".join((label, client_nonce.encode(), daemon_nonce.encode(), where.encode()))
    return hmac.new(token.encode(), msg, hashlib.sha256).hexdigest()


def server_proof(token: str, client_nonce: str, daemon_nonce: str, where: str) -> str:
    """What the daemon sends in `auth_challenge.proof`."""
    return _proof(SERVER_LABEL, token, client_nonce, daemon_nonce, where)


def client_proof(token: str, client_nonce: str, daemon_nonce: str, where: str) -> str:
    """What the client sends in its second `hello.auth.proof`."""
    return _proof(CLIENT_LABEL, token, client_nonce, daemon_nonce, where)


def same(expected: str, got: Any) -> bool:
    """Constant-time comparison of a proof received from the wire (anything not a string is wrong)."""
    return isinstance(got, str) and hmac.compare_digest(expected.encode(), got.encode())
