"""One read of the whole registry bucket (the KV bucket `litbridge_<fleet>`), for the client and the daemon.

nats-py's KV watcher signals "caught up" with a `None` marker, but it can put that marker before the entries:
when the server has pushed every entry (the consumer's `num_pending` is 0) before the subscription counted any
of them, the watcher decides there was nothing to deliver. Under load a whole read came back empty (a fleet
view without its daemons). So the read counts instead: the consumer's own info says how many messages it holds
for us (`num_pending` + delivered), and the read takes exactly that many, the marker ignored; deletes are
delivered and dropped here (counted, not skipped unseen).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from typing import Any

READ_TIMEOUT = 10.0  # seconds to wait for the next entry the consumer still owes us
DELETED = ("DEL", "PURGE")


async def snapshot(kv: Any) -> tuple[list[Any], datetime.datetime]:
    """Every live entry of `kv` (its last value per key), and the server's time now: the `created` stamp of
    the consumer this read opens (the server's clock, like the entries' stamps) plus the time elapsed here
    since, so a client whose clock is off still judges ages right (the local clock when the server does not
    say)."""
    import nats.errors

    watcher = await kv.watchall()
    opened = time.monotonic()
    server_then: datetime.datetime | None = None
    owed: int | None = None
    entries: list[Any] = []
    try:
        with contextlib.suppress(Exception):
            info = await watcher._sub.consumer_info()
            owed = int(info.num_pending) + int(info.delivered.consumer_seq)
            if isinstance(info.created, datetime.datetime):
                server_then = info.created
        seen = 0
        while owed is None or seen < owed:
            try:
                entry = await watcher.updates(timeout=READ_TIMEOUT)
            except nats.errors.TimeoutError:
                break  # a message the watcher drops unseen (an unknown server marker): keep what came
            if entry is None:
                if owed is None:
                    break  # no count to go by: the watcher's own marker
                continue
            seen += 1
            if entry.operation not in DELETED:
                entries.append(entry)
    finally:
        with contextlib.suppress(Exception):
            await watcher.stop()
    if server_then is None:
        return entries, datetime.datetime.now(datetime.timezone.utc)
    return entries, server_then + datetime.timedelta(seconds=time.monotonic() - opened)
