"""The folder watch (inotify through inotify_simple): events arrive without polling, missing folders are awaited
through an ancestor, a removed folder is watched again, sessions sharing a folder skip each other's writes, and
the one shared inotify instance per loop is closed with its last watch (no fd leaks)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from litbridge.drivers.records import watch

pytestmark = pytest.mark.skipif(not watch.available(), reason="inotify is Linux-only")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _wait(fut: asyncio.Future, timeout: float = 10.0) -> None:
    await asyncio.wait_for(asyncio.shield(fut), timeout)


def _append_line(path: Path) -> None:
    with open(path, "ab") as fh:
        fh.write(b"{}\n")


def test_a_write_in_the_folder_calls_back() -> None:
    async def main(tmp: Path) -> None:
        loop = asyncio.get_running_loop()
        hits: list[int] = []
        fut = loop.create_future()

        def cb() -> None:
            hits.append(1)
            if not fut.done():
                fut.set_result(None)

        w = watch.DirWatch.start(loop, tmp, cb)
        assert w is not None and w.ready
        (tmp / "s.jsonl").write_bytes(b"{}\n")
        await _wait(fut)
        w.close()
        n = len(hits)
        (tmp / "s.jsonl").write_bytes(b"{}\n{}\n")
        await asyncio.sleep(0.2)
        assert len(hits) == n  # closed: no more callbacks

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        asyncio.run(main(Path(d)))


def test_a_missing_folder_is_awaited_through_its_ancestor(tmp_path: Path) -> None:
    target = tmp_path / "projects" / "-slug"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        w = watch.DirWatch.start(loop, target, lambda: fut.done() or fut.set_result(None))
        assert w is not None and not w.ready and w.watched == tmp_path
        (tmp_path / "projects").mkdir()
        for _ in range(100):  # each creation moves the watch one level down
            if w.watched == tmp_path / "projects":
                break
            await asyncio.sleep(0.02)
        assert w.watched == tmp_path / "projects" and not fut.done()  # no folder yet: nothing to read
        target.mkdir()
        await _wait(fut)  # the folder appeared: the caller reads (its file may already be there)
        assert w.ready
        fut2 = loop.create_future()
        w.on_change = lambda: fut2.done() or fut2.set_result(None)
        (target / "x.jsonl").write_bytes(b"{}\n")
        await _wait(fut2)
        w.close()

    asyncio.run(main())


def test_the_shared_fd_is_closed_with_the_last_watch_over_many_cycles(tmp_path: Path) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        base = _fds()
        for i in range(300):
            a = watch.DirWatch.start(loop, tmp_path, lambda: None)
            b = watch.DirWatch.start(loop, tmp_path / f"missing-{i}", lambda: None)
            assert a is not None and b is not None and a.hub is b.hub  # one inotify instance per loop
            a.close()
            b.close()
            assert watch._hubs.get(loop) is None
        assert _fds() == base

    asyncio.run(main())


def test_sessions_sharing_a_folder_are_woken_only_by_their_own_file(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"")
    (tmp_path / "b.jsonl").write_bytes(b"")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        hits = {"a": 0, "b": 0}

        def make(name: str) -> watch.DirWatch | None:
            def cb() -> None:
                hits[name] += 1

            return watch.DirWatch.start(
                loop, tmp_path, cb, lambda m, n: bool(m & watch.IN_CREATE) or n == f"{name}.jsonl"
            )

        wa, wb = make("a"), make("b")
        assert wa is not None and wb is not None
        _append_line(tmp_path / "a.jsonl")
        for _ in range(200):
            if hits["a"]:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert hits == {"a": 1, "b": 0}
        (tmp_path / "c.jsonl").write_bytes(b"")  # a new file (a /clear roll?) wakes everyone
        for _ in range(200):
            if hits["b"]:
                break
            await asyncio.sleep(0.01)
        assert hits["a"] == 2 and hits["b"] == 1
        wa.close()
        wb.close()

    asyncio.run(main())


def test_a_removed_and_recreated_folder_is_watched_again(tmp_path: Path) -> None:
    target = tmp_path / "proj"
    target.mkdir()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        w = watch.DirWatch.start(loop, target, lambda: None)
        assert w is not None and w.ready
        target.rmdir()
        for _ in range(200):
            if w.watched == tmp_path:
                break
            await asyncio.sleep(0.01)
        assert w.watched == tmp_path and not w.ready
        target.mkdir()
        for _ in range(200):
            if w.ready:
                break
            await asyncio.sleep(0.01)
        assert w.ready
        fut = loop.create_future()
        w.on_change = lambda: fut.done() or fut.set_result(None)
        (target / "x.jsonl").write_bytes(b"{}\n")
        await _wait(fut)
        w.close()
        assert watch._hubs.get(loop) is None

    asyncio.run(main())


def test_refresh_moves_a_watch_down_to_a_folder_that_appeared_unseen(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        w = watch.DirWatch.start(loop, target, lambda: None)
        assert w is not None and w.watched == tmp_path and not w.refresh()
        # the folders appear while the loop is not reading events (as if created just before the add_watch)
        target.mkdir(parents=True)
        assert w.refresh() and w.ready and w.watched == target
        assert not w.refresh()  # nothing more to do
        w.close()
        assert watch._hubs.get(loop) is None

    asyncio.run(main())


def test_a_waiting_watchs_refresh_looks_only_at_the_next_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net refreshes every waiting watch every few seconds (a thousand at once while a thousand CLIs
    start): with the next folder on the way still missing, a refresh is a stat, not a walk up the tree."""
    target = tmp_path / "a" / "b" / "c"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        w = watch.DirWatch.start(loop, target, lambda: None)
        assert w is not None and w.watched == tmp_path
        walks: list[int] = []
        arm = watch.DirWatch._arm
        monkeypatch.setattr(watch.DirWatch, "_arm", lambda self: walks.append(1) or arm(self))
        (tmp_path / "other-session").mkdir()
        assert not any(w.refresh() for _ in range(5)) and walks == []
        (tmp_path / "a").mkdir()
        assert not w.refresh() and walks == [1] and w.watched == tmp_path / "a"  # moved down one folder
        (tmp_path / "a" / "b" / "c").mkdir(parents=True)
        assert w.refresh() and w.ready and w.watched == target
        w.close()

    asyncio.run(main())


def test_a_waiting_watch_does_not_look_at_the_disk_for_other_sessions_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst of creates makes a folder per session under one ancestor: a watch waiting there for its own
    folder re-arms (stats the way down) only for an event naming the next folder on its way."""
    projects = tmp_path / "projects"
    projects.mkdir()
    target = projects / "-mine"
    arms: list[Path | None] = []
    real_arm = watch.DirWatch._arm

    def counted(self: watch.DirWatch) -> bool:
        arms.append(self.watched)
        return real_arm(self)

    monkeypatch.setattr(watch.DirWatch, "_arm", counted)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        w = watch.DirWatch.start(loop, target, lambda: fut.done() or fut.set_result(None))
        assert w is not None and w.watched == projects and not w.ready
        started = len(arms)
        for i in range(20):
            (projects / f"-other-{i}").mkdir()
        await asyncio.sleep(0.3)  # the hub delivers those 20 creates
        assert len(arms) == started and not fut.done()
        target.mkdir()
        await _wait(fut)  # ours: the watch moves down and the caller reads
        assert w.ready and len(arms) == started + 1
        w.close()

    asyncio.run(main())
