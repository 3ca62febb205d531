"""The follow loop, both ways: with inotify (the timer effectively off, so only the watch can deliver) and with the
timer poll alone (as where inotify is missing). The record's folder and file appear late, lines come partial, the
file is replaced; every entry reaches the parser once, the dispatch hands the events on, and closing stops it all
(the shared inotify instance goes with the last watch)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from litbridge.drivers.records import JsonlFile, RecordFollower, follow, watch

log = logging.getLogger(__name__)


class Host:
    """What a follower uses of a driver host: the loop, timers and a logger."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.log = loop, log

    def call_later(self, delay: float, cb: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, cb)


class Parser:
    def __init__(self) -> None:
        self.fed: list[int] = []

    def feed(self, entries: list[dict[str, Any]]) -> list[int]:
        ns = [e["n"] for e in entries]
        self.fed.extend(ns)
        return ns


async def _until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _line(n: int) -> bytes:
    return orjson.dumps({"n": n}) + b"\n"


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "timer-poll"])
def test_follow_a_late_partial_replaced_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inotify: bool
) -> None:
    if inotify:
        if not watch.available():
            pytest.skip("inotify is Linux-only")
        monkeypatch.setattr(follow, "POLL_WATCHED", 3600.0)  # only the watch can deliver
    else:
        monkeypatch.setattr(watch, "INotify", None)  # as on macOS/Windows: the timer does it all
    folder = tmp_path / "projects" / "slug"
    path = folder / "record.jsonl"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        batches: list[list[int]] = []
        parser = Parser()
        fw = RecordFollower(Host(loop), JsonlFile(path), parser, batches.append, busy=lambda: True)
        fw.watch_folder(folder)
        fw.start()
        try:
            await run(loop, fw, parser, batches)
        finally:
            fw.close()

    async def run(loop: asyncio.AbstractEventLoop, fw: RecordFollower, parser: Parser, batches: list) -> None:
        assert (fw.watch is not None) == inotify and (watch._hubs.get(loop) is not None) == inotify
        assert fw.interval() == (3600.0 if inotify else follow.POLL_BUSY)
        await asyncio.sleep(0.3)
        folder.mkdir(parents=True)  # the folder, then the file, appear after the follower started
        path.write_bytes(_line(1) + b'{"n": ')
        await _until(lambda: parser.fed == [1])
        _append(path, b"2}\n")
        await _until(lambda: parser.fed == [1, 2])
        tmp = folder / "record.tmp"
        tmp.write_bytes(_line(3) + _line(4) + _line(5))
        os.replace(tmp, path)  # replaced by a longer file (the CLI started its record over)
        await _until(lambda: parser.fed == [1, 2, 3, 4, 5])
        assert [n for b in batches for n in b] == [1, 2, 3, 4, 5] and fw.quiet_for() < 60
        fw.close()
        _append(path, _line(6))
        await asyncio.sleep(0.3)
        assert parser.fed == [1, 2, 3, 4, 5]  # closed: nothing more
        assert watch._hubs.get(loop) is None  # the loop's inotify instance went with its last watch

    asyncio.run(main())


def test_sessions_in_one_loop_share_one_inotify_instance(tmp_path: Path) -> None:
    if not watch.available():
        pytest.skip("inotify is Linux-only")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        followers = []
        for i in range(5):
            fw = RecordFollower(Host(loop), JsonlFile(tmp_path / f"{i}.jsonl"), Parser(), lambda _e: None)
            fw.watch_folder(tmp_path / f"d{i}")
            followers.append(fw)
        hubs = {id(fw.watch.hub) for fw in followers if fw.watch is not None}
        assert len(hubs) == 1 and watch._hubs.get(loop) is not None
        hub = watch._hubs[loop]
        for fw in followers:
            fw.close()
        assert watch._hubs.get(loop) is None and hub.fd == -1

    asyncio.run(main())
