"""`store_resume` tokens that survive a daemon restart.

`kill --store-resume` leaves a token the next `create` of the same key resumes from. Kept only in memory, a
restarted daemon forgot every stored conversation; this mapping writes itself to
`$XDG_STATE_HOME/litbridge/resume-<id>.json` (default `~/.local/state`; the directory 0700, the file 0600, replaced
atomically) on every change, and loads at start. `<id>` is derived from the control socket path, so daemons on
different sockets (tests, several users of one account) keep separate stores. A file that cannot be read or
written is logged and the daemon carries on in memory: a client's `kill` never fails because of the disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import orjson

log = logging.getLogger("litbridge.resume_store")

FORMAT = 1


def state_dir() -> Path:
    """`$XDG_STATE_HOME/litbridge` (XDG Base Directory spec: `~/.local/state` when unset or not absolute)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "litbridge"


def store_path(socket_path: str) -> Path:
    digest = hashlib.sha256(os.path.abspath(socket_path).encode()).hexdigest()[:16]
    return state_dir() / f"resume-{digest}.json"


class ResumeStore(MutableMapping[str, str]):
    """session key -> resume token, persisted on every change (see the module docstring)."""

    def __init__(self, path: Path, socket_path: str = "") -> None:
        self.path = path
        self.socket_path = socket_path
        self._tokens: dict[str, str] = {}
        self.write_error: str | None = None  # why the last write failed (None: the file is up to date)
        self._load()

    @classmethod
    def for_socket(cls, socket_path: str) -> ResumeStore:
        return cls(store_path(socket_path), socket_path)

    # ------------------------------------------------------------------ mapping
    def __getitem__(self, key: str) -> str:
        return self._tokens[key]

    def __setitem__(self, key: str, token: str) -> None:
        self._tokens[key] = token
        self._save()

    def __delitem__(self, key: str) -> None:
        del self._tokens[key]
        self._save()

    def __iter__(self) -> Iterator[str]:
        return iter(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    # ------------------------------------------------------------------ disk
    def _load(self) -> None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("cannot read stored resume tokens %s: %s (starting without them)", self.path, exc)
            return
        try:
            data = orjson.loads(raw)
            tokens = data["tokens"]
            if not isinstance(tokens, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in tokens.items()
            ):
                raise ValueError("tokens is not an object of strings")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)
            log.warning("stored resume tokens %s unreadable (%s): moved to %s", self.path, exc, aside)
            return
        self._tokens = dict(tokens)
        if self._tokens:
            log.info("loaded %d stored resume token(s) from %s", len(self._tokens), self.path)

    def _save(self) -> None:
        data = orjson.dumps(
            {"format": FORMAT, "socket": self.socket_path, "tokens": self._tokens}, option=orjson.OPT_INDENT_2
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if sys.platform != "win32":
                os.chmod(self.path.parent, 0o700)
            fd, tmp = tempfile.mkstemp(prefix=".resume-", dir=self.path.parent)  # created 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("cannot store resume tokens in %s: %s (kept in memory only)", self.path, exc)
            self.write_error = f"cannot write {self.path}: {exc.strerror or exc}"
        else:
            self.write_error = None
