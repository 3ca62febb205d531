"""Session invariants with a scripted driver over a real `cat` child: FIFO gating, one terminal event per
turn, question ids and orphaning, answer routing, submit failures, death, resume tokens, pipes transport."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from litbridge import drivers
from litbridge import turns as turns_mod
from litbridge.drivers.base import Driver, DriverError, LaunchSpec
from litbridge.session import Session, SessionCommandError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix PTY")


class Scripted(Driver):
    name = "scripted"
    transport = "pty"

    def __init__(self, host: Any, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        self.accepting = True
        self.submitted: list[str] = []
        self.answers: list[tuple[Any, ...]] = []
        self.screens: list[list[tuple[int, str]]] = []
        self.outputs = bytearray()
        self.fail_submit: DriverError | None = None
        self.exit_seen: int | str | None = "no"

    def launch(self) -> LaunchSpec:
        return LaunchSpec(["cat"], transport=self.options.get("transport", "pty"))

    async def startup(self) -> dict[str, Any]:
        self.host.set_state("idle")
        return {"model": "m1", "resumed": self.options.get("resume") is not None}

    def can_accept_input(self) -> bool:
        return self.accepting

    async def submit(self, text: str) -> None:
        if self.fail_submit:
            raise self.fail_submit
        self.submitted.append(text)
        self.host.write(text.encode() + b"\r")

    def on_output(self, data: bytes) -> None:
        self.outputs += data
        if self.options.get("transport") == "pipes":
            self.host.terminal.feed(data.replace(b"\n", b"\r\n"))

    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        assert changed_rows
        self.screens.append(changed_rows)

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> None:
        if not self.host.open_questions():
            raise DriverError("no_question", "nothing to answer")
        qid = question_id or self.host.open_questions()[-1]
        self.answers.append((qid, digit, option, text))
        self.host.close_question(qid, "answered")

    def on_exit(self, exit_code: int | None) -> None:
        self.exit_seen = exit_code

    async def stop(self, store_resume: bool) -> str | None:
        return "resume-token-1" if store_resume else None

    def info(self) -> dict[str, Any]:
        return {"cli_version": "9.9", "transcript_path": "/x.jsonl", "count": 3, "extra": True}


drivers.register("scripted-test", Scripted)


class Rec(list):  # type: ignore[type-arg]
    def names(self) -> list[str]:
        return [e["event"] for e in self]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self if e["event"] == name]


async def until(cond: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise TimeoutError("condition never became true")
        await asyncio.sleep(0.01)


async def started(key: str = "s", **opts: Any) -> tuple[Session, Scripted, Rec]:
    rec = Rec()
    s = Session(key, {"session": key, "cli": "scripted-test", "working_dir": "/tmp", **opts}, rec.append)
    s.spawn()
    s.start(re="c")
    await until(lambda: s.ready)
    assert isinstance(s.driver, Scripted)
    return s, s.driver, rec


@pytest.mark.asyncio
async def test_fifo_gated_by_can_accept_input() -> None:
    s, d, rec = await started()
    try:
        assert rec.of("ready")[0]["model"] == "m1" and rec.of("ready")[0]["re"] == "c"
        d.accepting = False
        for n in range(3):
            s.send(f"m{n}", re=n)
        assert [a["queued"] for a in rec.of("accepted")] == [True, True, True]
        await asyncio.sleep(0.1)
        assert d.submitted == []
        d.accepting = True
        s.input_ready()
        await until(lambda: d.submitted == ["m0"])
        await asyncio.sleep(0.05)
        assert d.submitted == ["m0"], "one turn at a time"
        t0 = s.turn_id
        s.turn_complete("done0")
        s.turn_error("late", "api_error")  # ignored: the turn already ended
        await until(lambda: d.submitted == ["m0", "m1"])
        s.turn_interrupted("x")
        await until(lambda: d.submitted == ["m0", "m1", "m2"])
        s.turn_complete("done2")
        ids = [a["turn_id"] for a in rec.of("accepted")]
        terminal = [e for e in rec if e["event"] in ("complete", "interrupted", "turn_error")]
        assert [e["turn_id"] for e in terminal] == ids and terminal[0]["turn_id"] == t0
        assert [e["event"] for e in terminal] == ["complete", "interrupted", "complete"]
        assert rec.of("state")[-1]["to"] == "thinking"
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_replace_dedup_and_only_within_a_turn() -> None:
    s, d, rec = await started()
    try:
        s.turn_text("before any turn")
        s.send("q")
        await until(lambda: d.submitted)
        s.turn_text("a")
        s.turn_text("a")
        s.turn_text("ab")
        s.turn_thinking("spin")
        s.turn_thinking("spin")
        s.tool_use("tu1", "Bash", {"command": "ls"})
        s.tool_result("tu1", "y" * 6000, False)
        s.turn_complete(
            "ab",
            {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 0, "cache_creation_tokens": 0},
            "transcript",
        )
        assert [e["text"] for e in rec.of("replace")] == ["a", "ab"]
        assert len(rec.of("thinking")) == 1
        assert rec.of("tool_use")[0]["turn_id"] == rec.of("complete")[0]["turn_id"]
        assert len(rec.of("tool_result")[0]["content"]) == 5001
        assert (
            rec.of("complete")[0]["usage"]["output_tokens"] == 2
            and rec.of("complete")[0]["source"] == "transcript"
        )
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_questions_unique_orphaned_and_answered() -> None:
    s, d, rec = await started("qa")
    s2, _, rec2 = await started("qb")
    try:
        startup_q = s.open_question("trust", "Trust?", [{"digit": "1", "label": "Yes", "selected": True}])
        other_q = s2.open_question("choice", "Pick", [])
        assert startup_q != other_q, "question ids are unique per daemon"
        s.send("go")
        await until(lambda: d.submitted)
        q = s.open_question(
            "permission", "Allow?", [{"digit": "1", "label": "Yes", "selected": True}], source="cli-dialog"
        )
        assert len({startup_q, other_q, q}) == 3
        with pytest.raises(SessionCommandError) as info:
            await s.answer("q-nope", None, None, None)
        assert info.value.code == "no_question"
        await s.answer(q, "1", None, None, re="a1")
        assert d.answers == [(q, "1", None, None)]
        sent = rec.of("answer_sent")[0]
        assert sent["question_id"] == q and sent["digit"] == "1" and sent["re"] == "a1"
        assert rec.of("question_closed")[-1] == {
            **rec.of("question_closed")[-1],
            "question_id": q,
            "reason": "answered",
        }
        q2 = s.open_question("choice", "Another?", [])
        s.turn_complete("ok")
        closed = {e["question_id"]: e["reason"] for e in rec.of("question_closed")}
        assert closed[q2] == "orphaned", "a turn's questions are orphaned when it ends"
        assert startup_q not in closed, "a question outside the turn stays open"
        with pytest.raises(SessionCommandError):
            await s.answer(None, "x", None, None)
    finally:
        await s.kill()
        await s2.kill()
    closed = {e["question_id"]: e["reason"] for e in rec.of("question_closed")}
    assert closed[startup_q] == "orphaned", "open questions are orphaned when the session dies"
    assert {e["question_id"] for e in rec2.of("question_closed")} == {other_q}


@pytest.mark.asyncio
async def test_submit_failure_ends_turn_and_queue_moves_on() -> None:
    s, d, rec = await started()
    try:
        d.fail_submit = DriverError("timeout", "prompt never went live")
        s.send("one")
        await until(lambda: rec.of("turn_error"))
        err = rec.of("turn_error")[0]
        assert err["kind"] == "timeout" and err["message"] == "prompt never went live"
        d.fail_submit = None
        s.send("two")
        await until(lambda: d.submitted == ["two"])
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_death_ends_open_and_queued_turns() -> None:
    s, d, rec = await started()
    s.send("running")
    await until(lambda: d.submitted)
    d.accepting = False
    s.send("queued")
    assert s.child is not None
    s.write(b"\x04")  # EOF on an empty line: cat exits by itself
    await until(lambda: s.dead)
    assert d.exit_seen == 0
    errors = rec.of("turn_error")
    assert len(errors) == 2 and all(e["kind"] == "cli_exited" for e in errors)
    assert rec.of("exited")[0]["exit_code"] == 0
    assert rec.of("state")[-1]["to"] == "dead"
    assert rec.names().index("exited") > rec.names().index("turn_error")
    with pytest.raises(SessionCommandError):
        s.send("after death")
    code, token = await s.kill(store_resume=True)
    assert code == 0 and token is None, "no resume token from a dead session's driver"


@pytest.mark.asyncio
async def test_kill_store_resume_and_dump_fields() -> None:
    s, d, rec = await started(resume="prev")
    try:
        assert rec.of("ready")[0]["resumed"] is True
        s.input("hello")
        await until(lambda: "hello" in "".join(s.terminal.display))
        dump = s.dump(re="d")
        assert dump["re"] == "d" and dump["driver"] == "scripted" and dump["cli_version"] == "9.9"
        assert dump["transcript_path"] == "/x.jsonl" and dump["count"] == 3 and dump["extra"] is True
        assert "hello" in dump["capture"] and len(dump["capture"].split("\n")) == 50
        assert dump["osc_state"] is None and dump["queued"] == 0 and dump["observing"] is False
        assert all(rows for rows in d.screens)
        item = s.list_item()
        assert item["name"] == "s" and item["model"] == "m1" and item["pid"] == s.pid
    finally:
        _, token = await s.kill(store_resume=True)
    assert token == "resume-token-1"
    assert rec.of("state")[-1]["to"] == "dead" and not rec.of("exited"), "a kill is not an exit by itself"


@pytest.mark.asyncio
async def test_pipes_transport_renders_into_terminal_and_tees() -> None:
    s, d, _ = await started("p", transport="pipes")
    seen = bytearray()
    s.add_output_listener(lambda b: seen.extend(b) if b else None)
    try:
        assert s.transport == "pipes"
        s.input("via pipes")
        await until(lambda: b"via pipes" in d.outputs)
        await until(lambda: "via pipes" in s.dump()["capture"])
        assert b"via pipes" in seen, "attach viewers get what the driver renders"
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_screen_evaluated_once_per_synchronized_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    import litbridge.session as session_mod

    s, d, _ = await started("sync", transport="pipes")
    try:
        s.terminal.feed(b"\x1b[?2026h")
        if not s.terminal.in_sync_frame:
            pytest.skip("this Terminal implementation has no synchronized-output support")
        monkeypatch.setattr(session_mod, "SYNC_FRAME_FALLBACK", 30.0)
        await asyncio.sleep(0.05)
        d.screens.clear()
        s.terminal.feed(b"\x1b[Habc")
        await asyncio.sleep(0.1)
        assert d.screens == [], "nothing is evaluated inside a frame"
        s.terminal.feed(b"def\x1b[?2026l")
        await until(lambda: d.screens)
        await asyncio.sleep(0.05)
        assert len(d.screens) == 1 and d.screens[0][0][1].startswith("abcdef")
        # a frame that never ends is still evaluated, by the fallback timer
        monkeypatch.setattr(session_mod, "SYNC_FRAME_FALLBACK", 0.05)
        d.screens.clear()
        s.terminal.feed(b"\x1b[?2026h\x1b[2;1Hstuck")
        await until(lambda: d.screens)
        assert any(text.startswith("stuck") for rows in d.screens for _, text in rows)
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_output_is_evaluated_as_it_is_read_and_a_frame_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk read from the PTY is evaluated before its read returns (the loop reads a PTY once per iteration:
    a callback scheduled for later would coalesce nothing); a synchronized frame that ends inside a chunk is
    evaluated once, after the whole chunk; a chunk inside a frame is not evaluated."""
    import litbridge.session as session_mod

    s, d, _ = await started("inline")  # a PTY `cat` that says nothing: the chunks below are all it shows
    try:
        s.terminal.feed(b"\x1b[?2026h")
        if not s.terminal.in_sync_frame:
            pytest.skip("this Terminal implementation has no synchronized-output support")
        s.terminal.feed(b"\x1b[?2026l")
        monkeypatch.setattr(session_mod, "SYNC_FRAME_FALLBACK", 30.0)
        await asyncio.sleep(0.05)
        d.screens.clear()
        s._on_output(b"\x1b[Hplain")
        assert len(d.screens) == 1 and d.screens[0][0][1].startswith("plain")
        d.screens.clear()
        s._on_output(b"\x1b[?2026h\x1b[Habc\x1b[?2026l\x1b[?2026h\x1b[2;1Hnext")
        assert len(d.screens) == 1, "one evaluation, after the chunk"
        s._on_output(b"more")
        assert len(d.screens) == 1, "nothing inside a frame"
        s._on_output(b"\x1b[?2026l")
        assert len(d.screens) == 2 and any(text.startswith("nextmore") for _, text in d.screens[1])
        await asyncio.sleep(0.05)
        assert len(d.screens) == 2, "and nothing scheduled after"
    finally:
        await s.kill()


class Picky(Scripted):
    def validate_send(self, text: str) -> None:
        if not text.strip():
            raise DriverError("bad_field", "empty prompt")


drivers.register("picky-test", Picky)


@pytest.mark.asyncio
async def test_validate_send_rejects_before_accepting() -> None:
    rec = Rec()
    s = Session("v", {"session": "v", "cli": "picky-test", "working_dir": "/tmp"}, rec.append)
    s.spawn()
    s.start()
    try:
        await until(lambda: s.ready)
        with pytest.raises(SessionCommandError) as info:
            s.send("   ", msg_id="e1")
        assert info.value.code == "bad_field" and not rec.of("accepted")
        s.send("fine", msg_id="e1")  # a rejected id was not remembered
        assert rec.of("accepted")[0].get("duplicate") is None
    finally:
        await s.kill()


class NeverReady(Scripted):
    async def startup(self) -> dict[str, Any]:
        raise DriverError("timeout", "the prompt never appeared")


drivers.register("never-ready-test", NeverReady)


@pytest.mark.asyncio
async def test_failed_startup_kills_and_reaps() -> None:
    rec = Rec()
    s = Session("nr", {"session": "nr", "cli": "never-ready-test", "working_dir": "/tmp"}, rec.append)
    s.spawn()
    s.send("held")  # queued behind the startup
    s.start(re="c9")
    await until(lambda: s.dead)
    err = rec.of("error")
    assert len(err) == 1 and err[0]["code"] == "timeout" and err[0]["re"] == "c9"
    assert not rec.of("ready") and not rec.of("exited")
    assert rec.of("turn_error")[0]["kind"] == "cli_exited", "the held send still gets its terminal event"
    assert rec.of("state")[-1]["to"] == "dead"
    assert s.child is not None and s.child.exited


def test_no_logger_per_session_key() -> None:
    import logging

    async def make_many() -> None:
        for i in range(5):
            s = Session(f"leak-{i}", {"session": f"leak-{i}", "cli": "scripted-test"}, lambda e: None)
            s.log.info("hello")

    asyncio.run(make_many())
    assert not [n for n in logging.Logger.manager.loggerDict if n.startswith("litbridge.session.leak-")]


@pytest.mark.asyncio
async def test_spawn_async_runs_the_fork_off_the_loop_and_attaches_on_it() -> None:
    rec = Rec()
    s = Session("sa", {"session": "sa", "cli": "scripted-test", "working_dir": "/tmp"}, rec.append)
    try:
        spawning = asyncio.ensure_future(s.spawn_async())
        await asyncio.sleep(0)  # the fork is in flight: the key already takes input (keystroke, attach)
        assert s._spawning is not None and s.child is None
        s.write(b"typed-while-forking\r")
        await spawning
        assert s.child is not None and s.pid == s.child.pid and s._spawning is None
        await until(lambda: b"typed-while-forking" in s.driver.outputs)  # type: ignore[attr-defined]
        s.start(re="c")
        await until(lambda: s.ready)
        s.send("ping-off-loop")
        await until(lambda: b"ping-off-loop" in s.driver.outputs)  # type: ignore[attr-defined]
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_spawns_are_not_queued_behind_the_loops_default_executor() -> None:
    """A spawn waits for its child's exec, not for whatever fills the loop's default executor (a CLI's slow
    `--version`, any `to_thread`): with every default worker busy for seconds, a create still spawns at once."""
    import concurrent.futures
    import threading
    import time

    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(2)
    loop.set_default_executor(pool)
    release = threading.Event()
    busy = [loop.run_in_executor(None, release.wait, 30.0) for _ in range(4)]
    s = Session("sq", {"session": "sq", "cli": "scripted-test", "working_dir": "/tmp"}, lambda e: None)
    try:
        t0 = time.monotonic()
        await asyncio.wait_for(s.spawn_async(), 10)
        assert s.child is not None and time.monotonic() - t0 < 5.0
        assert not any(f.done() for f in busy), "the default executor was still full during the spawn"
    finally:
        release.set()
        await asyncio.gather(*busy)
        await s.kill()
        pool.shutdown()


@pytest.mark.asyncio
async def test_kill_during_spawn_async_reaps_the_child() -> None:
    """A kill (or shutdown) that lands while the fork runs in a worker waits for the child and reaps it."""
    import os

    s = Session("sk", {"session": "sk", "cli": "scripted-test", "working_dir": "/tmp"}, lambda e: None)
    spawning = asyncio.ensure_future(s.spawn_async())
    await asyncio.sleep(0)  # the fork is now in flight in the executor
    assert s._spawning is not None
    await s.kill()
    await spawning
    assert s.dead and s.child is not None and s.child.exited
    with pytest.raises(ProcessLookupError):
        os.killpg(s.child.pgid, 0)


@pytest.mark.asyncio
async def test_spawn_async_failure_is_a_session_error() -> None:
    s = Session(
        "sf", {"session": "sf", "cli": "scripted-test", "working_dir": "/nonexistent-dir-xyz"}, lambda e: None
    )
    with pytest.raises(SessionCommandError) as info:
        await s.spawn_async()
    assert info.value.code == "spawn_failed" and "working_dir" in info.value.message
    assert s.child is None and s._spawning is None


@pytest.mark.asyncio
@pytest.mark.parametrize("via", ["command", "noted"])
async def test_an_interrupt_the_cli_never_honours_ends_at_the_fallback(
    monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    """The `interrupt` command, or an interrupt a driver reports (`interrupt_noted`: keys typed through attach,
    the CLI's own cancel), ends the turn `interrupted` after INTERRUPT_FALLBACK even though the driver never
    does, and the queue moves on."""
    monkeypatch.setattr(turns_mod, "INTERRUPT_FALLBACK", 0.3)
    s, d, rec = await started(f"intr-{via}")
    try:
        s.send("first")
        s.send("second")
        await until(lambda: d.submitted == ["first"])
        tid = s.turn_id
        s.set_state("responding")  # the CLI works on, as a driver reports it
        if via == "command":
            s.interrupt()
        s.interrupt_noted()
        s.interrupt_noted()
        await asyncio.sleep(0.15)
        assert s.turn_id == tid and not rec.of("interrupted")  # before the fallback: still open
        await until(lambda: rec.of("interrupted"))
        before = [e for e in rec[: rec.index(rec.of("interrupted")[0])] if e["event"] == "state"]
        assert before[-1]["to"] == "idle", "state first, then the terminal event"
        await until(lambda: d.submitted == ["first", "second"])
        await asyncio.sleep(0.4)  # the fallback belongs to its turn: the next one is not ended by it
        assert [e["turn_id"] for e in rec.of("interrupted")] == [tid]
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_organic_turn_is_a_turn_and_holds_the_queue() -> None:
    """A prompt typed via attach (reported by the driver) gets a turn id, one terminal event, and FIFO order."""
    s, d, rec = await started("org")
    try:
        tid = s.begin_organic_turn("typed at the prompt")
        assert tid is not None and s.turn_id == tid
        acc = rec.of("accepted")[-1]
        assert acc["turn_id"] == tid and acc["organic"] is True and acc["queued"] is False and "re" not in acc
        assert acc["content"] == "typed at the prompt"  # what the driver read off the CLI's record
        assert s.begin_organic_turn("again") is None  # one turn at a time
        s.send("queued behind it")
        assert rec.of("accepted")[-1]["queued"] is True and d.submitted == []
        assert rec.of("accepted")[-1]["content"] == "queued behind it"
        s.turn_complete("typed answer")
        done = rec.of("complete")
        assert [c["turn_id"] for c in done] == [tid] and done[0]["content"] == "typed answer"
        await until(lambda: d.submitted == ["queued behind it"])
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_accepted_echoes_the_prompt_cut_to_the_limit() -> None:
    """`accepted.content` is the send's text (also on the duplicate's reply); a prompt over TEXT_LIMIT is
    cut there and marked `…` (every event stays in the replay ring), while the CLI is sent all of it."""
    from litbridge.protocol.spec import TEXT_LIMIT, feature_names

    assert "accepted.content" in feature_names() and "create.worktree" in feature_names()
    s, d, rec = await started("echo")
    try:
        s.send("short one", msg_id="m1")
        s.send("short one", msg_id="m1")
        first, dup = rec.of("accepted")[-2:]
        assert first["content"] == dup["content"] == "short one" and dup["duplicate"] is True
        await until(lambda: d.submitted == ["short one"])
        s.turn_complete("ok")
        big = "x" * TEXT_LIMIT + "tail"
        s.send(big)
        assert rec.of("accepted")[-1]["content"] == "x" * TEXT_LIMIT + "…"
        await until(lambda: d.submitted == ["short one", big])
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_client_chosen_key_cannot_forge_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    """Session keys (and the client's working_dir) are escaped in log lines: a client cannot forge the log."""
    import logging

    key = "inj\n2026-01-01 00:00:00,000 WARNING forged\n\x1b[2J"
    caplog.set_level(logging.INFO, logger="litbridge")
    s = Session(key, {"session": key, "cli": "scripted-test", "working_dir": "/tmp"}, lambda e: None)
    try:
        s.spawn()
        s.log.info("hello")
    finally:
        await s.kill()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "[inj\\n2026-01-01 00:00:00,000 WARNING forged\\n\\x1b[2J] hello" in text
    assert "\x1b" not in text and "\nforged" not in text and "\n2026" not in text


class LateCloser(Scripted):
    """Delivers answers but leaves closing the question to a later screen (like a dialog still fading)."""

    async def answer(
        self,
        question_id: str | None,
        digit: str | None = None,
        option: str | None = None,
        text: str | None = None,
    ) -> None:
        self.answers.append((question_id, digit, option, text))


drivers.register("late-closer-test", LateCloser)


@pytest.mark.asyncio
async def test_answered_question_closed_by_turn_end_counts_as_answered() -> None:
    s, d, rec = await started("lc", cli="late-closer-test")
    try:
        s.send("go")
        await until(lambda: d.submitted)
        answered = s.open_question("permission", "Allow?", [{"digit": "1", "label": "Yes", "selected": True}])
        await s.answer(None, "1", None, None)  # the only open question: it is the one answered
        ignored = s.open_question("choice", "Another?", [])
        s.turn_complete("done")  # the CLI finished before the driver saw the dialog go
        closed = {e["question_id"]: e["reason"] for e in rec.of("question_closed")}
        assert closed == {answered: "answered", ignored: "orphaned"}
    finally:
        await s.kill()
