"""The transcript folder watch (inotify): events arrive without polling, missing folders are awaited, no fd leaks.

Also the driver end of it: a turn completes from the transcript with the timer poll effectively off, a turn that
finishes before the first stream tick still gets its `replace` first, and the watch is closed on exit.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import orjson
import pytest
from claude_captures import ScreenChild, make_session, screen

from litbridge.drivers import dirwatch as watch
from litbridge.drivers.claude import follow

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")

PASTE, ENTER = b"\x1b[200~", b"\r"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _wait(fut: asyncio.Future, timeout: float = 10.0) -> None:
    await asyncio.wait_for(asyncio.shield(fut), timeout)


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


def _screen(name: str) -> list[str]:
    return screen("s02_", name)


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "timer-poll"])
def test_driver_completes_from_inotify_with_replace_first_and_closes_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inotify: bool
) -> None:
    if inotify:
        monkeypatch.setattr(follow, "POLL_WATCHED", 3600.0)  # only the watch can deliver the transcript
    else:
        monkeypatch.setattr(watch, "_lib", lambda: None)  # as on macOS/Windows: the timer poll does it all

    async def main() -> None:
        loop = asyncio.get_running_loop()
        screens = {n: _screen(n) for n in ("01_idle_before.txt", "02_typed_prompt.txt")}
        screens["busy"] = _screen("04_t+1s_spinner_before_first_token.txt")
        cli = ScreenChild(loop, screens, "01_idle_before.txt", {})
        drv, session, events = make_session(tmp_path, cli)
        base = _fds()

        def append(*entries: dict) -> None:
            path = drv.follower.tailer.path
            assert path is not None
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as fh:
                for e in entries:
                    fh.write(orjson.dumps(e) + b"\n")

        answer = "Paris is the capital of France."
        text = "What is the capital of France?"

        def on_write(data: bytes) -> None:
            if data.startswith(PASTE):
                loop.call_later(0.01, cli.show, "02_typed_prompt.txt")
            elif data == ENTER:
                loop.call_later(0.01, cli.show, "busy")
                # the whole answer lands 20 ms after the Enter: before any stream tick
                loop.call_later(
                    0.02,
                    append,
                    {"type": "user", "message": {"content": text}},
                    {
                        "type": "assistant",
                        "message": {
                            "id": "m1",
                            "stop_reason": "end_turn",
                            "usage": {"input_tokens": 5, "output_tokens": 7},
                            "content": [{"type": "text", "text": answer}],
                        },
                    },
                    {"type": "system", "subtype": "turn_duration"},
                )

        cli.on_write = on_write
        session.spawn()
        session.start()
        for _ in range(100_000):
            if session.started:
                break
            await asyncio.sleep(0.01)
        fw = drv.follower
        assert (fw._watch is not None) == inotify  # folder not there yet: awaited through an ancestor
        session.send(text)
        for _ in range(500):
            if any(e["event"] == "complete" for e in events):
                break
            await asyncio.sleep(0.01)
        kinds = [e["event"] for e in events if e["event"] in ("replace", "complete")]
        assert kinds == ["replace", "complete"], kinds
        rep, done = (e for e in events if e["event"] in ("replace", "complete"))
        assert rep["text"] == answer and done["content"] == answer and done["source"] == "transcript"
        hub = fw._watch.hub if fw._watch is not None else None
        cli.exit(0)
        assert fw._watch is None and watch._hubs.get(loop) is None
        assert hub is None or hub.fd == -1
        assert _fds() <= base

    asyncio.run(main())


def _append_line(path: Path) -> None:
    with open(path, "ab") as fh:
        fh.write(b"{}\n")


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


def test_driver_follows_a_clear_roll_in_the_watched_folder(tmp_path: Path) -> None:
    """`/clear` makes Claude start a new file in the same folder: the watch sees it appear and the driver pins it."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cli = ScreenChild(loop, {"idle": _screen("01_idle_before.txt")}, "idle", {})
        drv, session, _events = make_session(tmp_path, cli)
        drv.launch()
        tailer = drv.follower.tailer
        assert tailer.path is not None
        tailer.directory.mkdir(parents=True)
        tailer.path.write_bytes(b"")
        session.spawn()
        session.start()
        for _ in range(100_000):
            if session.started:
                break
            await asyncio.sleep(0.01)
        fw = drv.follower
        assert fw._watch is not None and fw._watch.ready
        await asyncio.sleep(1.2)  # past the timer's first look; from now on only a new file makes it look
        old = fw.session_id
        rolled = "11111111-2222-3333-4444-555555555555"
        clear = {
            "type": "user",
            "cwd": str(tmp_path / "work"),
            "message": {"content": "<command-name>/clear</command-name>"},
        }
        (fw.tailer.directory / f"{rolled}.jsonl").write_bytes(orjson.dumps(clear) + b"\n")
        for _ in range(300):
            if fw.session_id == rolled:
                break
            await asyncio.sleep(0.01)
        assert old != rolled and fw.session_id == rolled and drv.info()["claude_session_id"] == rolled
        # what `kill{store_resume:true}` stores is the rolled conversation, id and file together
        assert drv.resume_record() == (rolled, fw.tailer.directory / f"{rolled}.jsonl")
        cli.exit(0)

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
