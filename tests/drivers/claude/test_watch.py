"""The driver end of the transcript folder watch (the watch itself: tests/drivers/records/test_watch.py): a turn completes from the transcript with the timer poll effectively off, a turn that
finishes before the first stream tick still gets its `replace` first, and the watch is closed on exit.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
import pytest
from claude_captures import ScreenChild, make_session, screen

from litbridge.drivers.records import follow, watch

pytestmark = pytest.mark.skipif(not watch.available(), reason="inotify is Linux-only")

PASTE, ENTER = b"\x1b[200~", b"\r"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _screen(name: str) -> list[str]:
    return screen("s02_", name)


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "timer-poll"])
def test_driver_completes_from_inotify_with_replace_first_and_closes_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inotify: bool
) -> None:
    if inotify:
        monkeypatch.setattr(follow, "POLL_WATCHED", 3600.0)  # only the watch can deliver the transcript
    else:
        monkeypatch.setattr(watch, "INotify", None)  # as on macOS/Windows: the timer poll does it all

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
