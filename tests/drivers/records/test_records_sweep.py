"""Following many records without polling: one shared sweep per loop instead of a timer per follower, stat-only
looks at idle records, no folder listing on an idle look, and a poll (where inotify is missing) that backs off on
files that do not change. The paces are shortened here; the behaviour, not the timing, is asserted."""

from __future__ import annotations

import asyncio
import datetime as _dt
import itertools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from litbridge.drivers.claude.follow import TranscriptFollower
from litbridge.drivers.claude.transcript import TurnTracker
from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.codex.follow import RolloutFollower
from litbridge.drivers.records import JsonlFile, RecordFollower, follow, watch
from litbridge.drivers.records.jsonl import stat_signature as stat_signature

log = logging.getLogger(__name__)


class Host:
    """A driver host's loop, logger and per-session timers (counted: a follower should not need any)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.log = loop, log
        self.timers = 0

    def call_later(self, delay: float, cb: Callable[[], None]) -> asyncio.TimerHandle:
        self.timers += 1
        return self.loop.call_later(delay, cb)


class Parser:
    def __init__(self) -> None:
        self.fed: list[int] = []

    def feed(self, entries: list[dict[str, Any]]) -> list[int]:
        ns = [e["n"] for e in entries]
        self.fed.extend(ns)
        return ns


class CountingFile(JsonlFile):
    """A JSONL source that counts its reads (`poll`) apart from its stat-only stamps; `looks`: the loop times
    of both."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.polls = 0
        self.looks: list[float] = []

    def poll(self) -> list[dict[str, Any]]:
        self.polls += 1
        self.looks.append(asyncio.get_running_loop().time())
        return super().poll()

    def signature(self) -> Any:
        self.looks.append(asyncio.get_running_loop().time())
        return super().signature()


def _line(n: int) -> bytes:
    return orjson.dumps({"n": n}) + b"\n"


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


async def _until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)


def _count_timers(loop: asyncio.AbstractEventLoop) -> dict[str, int]:
    """Wrap the loop's timer calls (on this loop object only) and count them."""
    n = {"timers": 0}
    for name in ("call_later", "call_at"):
        real = getattr(loop, name)

        def counted(*a: Any, _real: Any = real, **k: Any) -> Any:
            n["timers"] += 1
            return _real(*a, **k)

        setattr(loop, name, counted)
    return n


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count folder listings (`os.scandir`, what pathlib's glob and iterdir use, and `os.listdir`)."""
    n = {"lists": 0}
    for name in ("scandir", "listdir"):
        real = getattr(os, name)

        def counted(*a: Any, _real: Any = real, **k: Any) -> Any:
            n["lists"] += 1
            return _real(*a, **k)

        monkeypatch.setattr(os, name, counted)
    return n


def test_watched_followers_set_no_timers_of_their_own_while_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 idle sessions with a live watch: no per-session timer, no read; the loop's timers over the idle span are
    the one shared sweep's (its period), however many followers there are."""
    if not watch.available():
        pytest.skip("inotify is Linux-only")
    monkeypatch.setattr(follow, "POLL_WATCHED", 0.3)
    n_followers, idle = 20, 1.5

    async def main() -> None:
        loop = asyncio.get_running_loop()
        host = Host(loop)
        followers, sources = [], []
        for i in range(n_followers):
            folder = tmp_path / f"p{i}"
            folder.mkdir()
            (folder / "r.jsonl").write_bytes(_line(0))
            src = CountingFile(folder / "r.jsonl")
            fw = RecordFollower(host, src, Parser(), lambda _e: None)
            fw.watch_folder(folder)
            fw.start()
            followers.append(fw)
            sources.append(src)
        try:
            await _until(lambda: all(s.polls for s in sources))  # each first look has read its record
            await asyncio.sleep(0.5)
            polls = sum(s.polls for s in sources)
            counter = _count_timers(loop)
            await asyncio.sleep(idle)
            timers = counter["timers"] - 1  # the sleep's own
            assert host.timers == 0, "a follower set a per-session timer"
            assert timers <= idle / 0.3 + 3 < n_followers, timers
            assert sum(s.polls for s in sources) == polls, "an unchanged record was read"
            # a busy turn's write still arrives at once, from the watch
            _append(tmp_path / "p7" / "r.jsonl", _line(1))
            await _until(lambda: followers[7].tracker.fed == [0, 1])
        finally:
            for fw in followers:
                fw.close()
        assert follow._Sweep._all.get(loop) is None  # the sweep went with its last follower

    asyncio.run(main())


def test_a_missed_inotify_event_is_caught_by_the_shared_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not watch.available():
        pytest.skip("inotify is Linux-only")
    monkeypatch.setattr(follow, "POLL_WATCHED", 0.5)
    monkeypatch.setattr(watch.DirWatch, "_fired", lambda self, events: None)  # every event is lost
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(1))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        parser = Parser()
        fw = RecordFollower(Host(loop), JsonlFile(path), parser, lambda _e: None)
        fw.watch_folder(tmp_path)
        fw.start()
        try:
            await _until(lambda: parser.fed == [1])
            assert fw.watch is not None and fw.watch.ready
            _append(path, _line(2))
            await _until(lambda: parser.fed == [1, 2])  # no event came: the sweep's stat saw the file grow
        finally:
            fw.close()

    asyncio.run(main())


def test_the_fallback_poll_backs_off_on_idle_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without inotify an idle record is looked at less and less often, by a stat (no read); a write brings the
    pace back to fast."""
    monkeypatch.setattr(watch, "INotify", None)
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(1))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        parser = Parser()
        src = CountingFile(path)
        fw = RecordFollower(Host(loop), src, parser, lambda _e: None, busy=lambda: False)
        looks = src.looks
        fw.start()
        try:
            await _until(lambda: parser.fed == [1])
            polls, since = src.polls, len(looks)
            await asyncio.sleep(3.0)
            idle = sorted(set(looks[since:]))  # a stamp and its read in one look count once
            gaps = [b - a for a, b in itertools.pairwise(idle)]
            assert src.polls == polls, "an unchanged file was read"
            assert len(idle) <= 9, gaps  # a fixed 0.25 s pace would look 12 times
            assert gaps and max(gaps) >= 0.5 and gaps[-1] >= gaps[0], gaps
            _append(path, _line(2))
            await _until(lambda: parser.fed == [1, 2])
            assert fw._pace == follow.POLL_BUSY  # a change: the next look comes soon again
        finally:
            fw.close()

    asyncio.run(main())


def _engine() -> Any:
    return SimpleNamespace(turn=None, screen=None)


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "no-inotify"])
def test_claude_lists_its_folder_only_when_a_file_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inotify: bool
) -> None:
    """An idle Claude session lists its transcript folder on no look; a `/clear` roll (a new file starting with
    `/clear`) is still followed, with the watch and without it."""
    if inotify and not watch.available():
        pytest.skip("inotify is Linux-only")
    if not inotify:
        monkeypatch.setattr(watch, "INotify", None)
    monkeypatch.setattr(follow, "POLL_WATCHED", 0.2)
    monkeypatch.setattr(follow, "POLL_SLOW", 0.2, raising=False)
    folder = tmp_path / "slug"
    folder.mkdir()
    own = folder / "aaaa.jsonl"
    own.write_bytes(b"")
    cwd = str(tmp_path)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        events: list[Any] = []
        fw = TranscriptFollower(Host(loop), folder, cwd, "aaaa", False, TurnTracker(), events.extend)
        fw.start(_engine())
        try:
            await asyncio.sleep(0.5)
            lists = _count_listings(monkeypatch)
            await asyncio.sleep(1.5)
            assert lists["lists"] == 0, "an idle look listed the folder"
            clear = {
                "type": "user",
                "cwd": cwd,
                "message": {"content": "<command-name>/clear</command-name>"},
            }
            (folder / "bbbb.jsonl").write_bytes(orjson.dumps(clear) + b"\n")
            await _until(lambda: fw.session_id == "bbbb")
        finally:
            fw.close()

    asyncio.run(main())


def test_codex_lists_its_dated_folder_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompted Codex session whose rollout is not there yet: its dated folder is listed when it changes (or
    at the full scan's slow pace), not on every look; the rollout is found once it lands."""
    monkeypatch.setattr(follow, "POLL_IDLE", 0.05)
    monkeypatch.setattr(follow, "POLL_SLOW", 0.05, raising=False)
    monkeypatch.setattr("litbridge.drivers.codex.follow.FULL_SCAN_EVERY", 3600.0)
    home = tmp_path / "codex"
    today = _dt.datetime.now()
    day = ro.sessions_dir({"CODEX_HOME": str(home)}) / f"{today:%Y}" / f"{today:%m}" / f"{today:%d}"
    day.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()

    def rollout(name: str, cwd: str, prompt: str) -> None:
        meta = {"type": "session_meta", "payload": {"cwd": cwd}}
        item = {"type": "UserMessage", "content": [{"type": "text", "text": prompt}]}
        msg = {"type": "event_msg", "payload": {"type": "item_completed", "item": item}}
        (day / name).write_bytes(orjson.dumps(meta) + b"\n" + orjson.dumps(msg) + b"\n")

    stamp = f"{today:%Y-%m-%dT%H-%M-%S}"
    rollout(f"rollout-{stamp}-00000000-0000-0000-0000-000000000001.jsonl", "/elsewhere", "other")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fw = RolloutFollower(
            Host(loop),
            {"CODEX_HOME": str(home)},
            str(work),
            lambda: (True, "hello"),
            ro.TurnTracker(),
            lambda _e: None,
        )
        fw.start()
        looks: list[float] = []
        real = fw._find

        def find() -> None:
            looks.append(loop.time())
            real()

        fw._find = find  # type: ignore[method-assign]
        try:
            await _until(lambda: len(looks) >= 3)
            lists = _count_listings(monkeypatch)
            before = len(looks)
            await asyncio.sleep(1.0)
            assert len(looks) > before + 3, "the search was not looking"
            assert lists["lists"] == 0, f"{lists['lists']} listings over {len(looks) - before} looks"
            ours = f"rollout-{stamp}-00000000-0000-0000-0000-000000000002.jsonl"
            rollout(ours, str(work), "hello")
            await _until(lambda: fw.path is not None and fw.path.name == ours)
        finally:
            fw.close()

    asyncio.run(main())


def test_a_read_takes_the_record_stamp_from_its_own_poll(tmp_path: Path) -> None:
    """A read of a source that stamps its polls (`JsonlFile`) keeps the poll's stat as the record's signature,
    without a stat of its own; the safety net's next look then skips the unchanged record and reads a grown one.
    Claude's follower adds its folder's stamp only while no live watch sees new files there; a read's is the one
    its `locate()` compared, so a roll that appears meanwhile still changes the next look's."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(_line(1))

    class Stamping(JsonlFile):
        sigs = 0

        def signature(self) -> Any:
            self.sigs += 1
            return super().signature()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        src, parser = Stamping(path), Parser()
        fw = RecordFollower(Host(loop), src, parser, lambda _e: None)
        assert fw.read() == [1] and fw.read() == []
        assert src.sigs == 0, "a read took a stat of its own"
        assert fw._sig == fw.signature()  # nothing new: a safety-net look would not read
        _append(path, _line(2))
        assert fw._sig != fw.signature()
        assert fw.read() == [2] and fw._sig == fw.signature()
        fw.close()
        assert src._fd is None  # the follower's close lets the source's descriptor go

        folder = tmp_path / "slug"
        folder.mkdir()
        cf = TranscriptFollower(
            Host(loop), folder, str(tmp_path), "aaaa", False, TurnTracker(), lambda _e: None
        )
        try:
            folder_stamp = stat_signature(folder)
            assert folder_stamp is not None and cf.stamped(None) == (None, folder_stamp)
            await asyncio.sleep(0.05)  # past the file system's clock tick
            (folder / "bbbb.jsonl").write_bytes(b"")  # a roll appears between a read's locate() and its stamp
            assert cf.stamped(None) == (None, folder_stamp)  # a read keeps what locate() compared
            assert cf.signature() != (cf.tailer.stamp, folder_stamp)  # so the next look differs and reads
            if watch.available():
                cf.watch_folder(folder)
                await _until(lambda: cf.watch is not None and cf.watch.ready)
                assert cf.stamped(None) == (None, None)  # the watch sees a roll's new file itself
        finally:
            cf.close()

    asyncio.run(main())
