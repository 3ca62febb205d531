"""The generic driver end to end in-process (Session + real PTY): bash and python3 turns, scrolling,
ready on first settle, quiescence completion with source "screen", Ctrl-C interrupt."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lbd_helpers import check_event  # tests/daemon: on pyproject's pythonpath

from litbridge.drivers import get_driver, shellmarks
from litbridge.drivers.generic import GenericDriver
from litbridge.session import Session

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix PTY")


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._cond = asyncio.Condition()
        self.session: Session | None = None  # set by `make`: its screen goes into a failure's story

    def story(self) -> str:
        """What a failed wait shows: the last events (texts cut short) and the screen."""
        lines = [
            " ".join(f"{k}={str(v)[:80]!r}" for k, v in e.items() if k not in ("session", "ts"))
            for e in self.events[-25:]
        ]
        if self.session is not None and self.session.terminal is not None:
            lines += ["-- screen --", *(r.rstrip() for r in self.session.terminal.display if r.strip())]
            marks = getattr(self.session.driver, "marks", None)
            fields = ("active", "running", "prompt_drawn", "_enters", "_prompts")
            lines.append(
                f"-- state {self.session.state}; marks " + str({f: getattr(marks, f, None) for f in fields})
            )
        return "\n".join(lines)

    def __call__(self, ev: dict[str, Any]) -> None:
        check_event(ev)  # every event obeys `litbridge schema`
        self.events.append(ev)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    async def wait(self, name: str, timeout: float = 20, **match: Any) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for e in self.events:
                if e["event"] == name and all(e.get(k) == v for k, v in match.items()):
                    return e
            return None

        try:
            async with self._cond:
                await asyncio.wait_for(self._cond.wait_for(find), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no {name} {match or ''} within {timeout} s\n{self.story()}") from None
        found = find()
        assert found is not None
        return found


def make(cli: str, args: list[str], rec: Recorder, one_byte_reads: bool = False, **extra: Any) -> Session:
    opts = {"session": cli, "cli": cli, "args": args, "working_dir": "/tmp", "quiescence": 0.5, **extra}
    s = Session(cli, opts, rec)
    rec.session = s
    if one_byte_reads:
        _one_byte_reads(s)
    s.spawn()
    s.start(re="c1")
    return s


def _one_byte_reads(s: Session) -> None:
    """The child's output reaches the session one byte per read, each followed by a screen evaluation: a PTY
    read may end anywhere (a loaded box splits a REPL's echo), here deterministically so."""
    loop = asyncio.get_running_loop()
    whole = s._on_output
    pending = bytearray()

    def drain() -> None:
        whole(bytes(pending[:1]))  # schedules the screen evaluation before the next byte
        del pending[:1]
        if pending:
            loop.call_soon(drain)

    def piecewise(data: bytes) -> None:
        if not pending:
            loop.call_soon(drain)
        pending.extend(data)

    s._on_output = piecewise  # type: ignore[method-assign]


def test_unknown_cli_uses_generic() -> None:
    assert get_driver("bash") is GenericDriver
    assert get_driver("/usr/bin/python3") is GenericDriver


@pytest.mark.asyncio
async def test_bash_turns_and_scroll() -> None:
    rec = Recorder()
    s = make("bash", ["--norc", "--noprofile"], rec, env={"PS1": "$ ", "HISTFILE": "/dev/null"})
    try:
        ready = await rec.wait("ready")
        assert ready["re"] == "c1" and ready["model"] is None
        s.send("echo hi")
        done = await rec.wait("complete")
        assert done["content"] == "hi" and done["source"] == "screen"
        states = [(e["from"], e["to"]) for e in rec.events if e["event"] == "state"]
        assert ("starting", "idle") in states and ("idle", "thinking") in states and states[-1][1] == "idle"
        # more output than the screen holds: the tail of the text is still right
        s.send("seq 1 120")
        for _ in range(200):
            completes = [e for e in rec.events if e["event"] == "complete"]
            if len(completes) == 2:
                break
            await asyncio.sleep(0.05)
        text = completes[1]["content"]
        lines = text.splitlines()
        assert lines[-1] == "120" and lines == [str(n) for n in range(int(lines[0]), 121)]
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_python_repl_turn_and_interrupt() -> None:
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec)
    try:
        await rec.wait("ready")
        s.send("print(6*7)")
        done = await rec.wait("complete")
        assert done["content"] == "42"
        s.send("import time\nwhile True: print('tick'); time.sleep(0.1)\n")  # output keeps the turn open
        for _ in range(400):
            ticks = [e for e in rec.events if e["event"] == "replace" and "tick" in e["text"]]
            if ticks:
                break
            await asyncio.sleep(0.05)
        turn = ticks[0]["turn_id"]
        assert s.turn_id == turn
        s.interrupt(re="i1")
        ev = await rec.wait("interrupted", turn_id=turn)
        assert ev["re"] == "i1"
        for _ in range(200):  # let the REPL print its KeyboardInterrupt and prompt before the next send
            if "KeyboardInterrupt" in "\n".join(s.terminal.display) and s.state == "idle":
                break
            await asyncio.sleep(0.05)
        s.send("print('after')")
        done = await rec.wait("complete", content="after")
        assert done["turn_id"] != turn
        assert (
            sum(
                1
                for e in rec.events
                if e.get("turn_id") == turn and e["event"] in ("complete", "interrupted")
            )
            == 1
        )
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_a_ctrl_c_answered_at_the_prompt_does_not_end_the_next_send() -> None:
    """A Ctrl-C that reaches the REPL after its command ended (the driver's repeated press as the interrupted
    command was already printing its prompt, on a loaded box; or a key typed through attach) is answered at the
    prompt with `KeyboardInterrupt` and a new prompt. When a send was typed just behind it, that prompt comes
    before the send's echo: it is not the send's end, so the turn completes with the send's own output."""
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec)
    try:
        await rec.wait("ready")
        s.write_raw(b"\x03")  # not yet read by the REPL when the send is typed behind it
        s.send("print('after')")
        done = await rec.wait("complete")
        # the signal is asynchronous: the REPL answers it at the prompt (then runs the send), or raises it in
        # the send's own code (its traceback is the send's output); never is a bare prompt the send's answer
        assert done["content"] == "after" or done["content"].startswith("Traceback"), rec.story()
        s.send("print('again')")
        assert (await rec.wait("complete", content="again"))["turn_id"] != done["turn_id"]
    finally:
        await s.kill()


def test_a_python_prompt_split_across_reads_takes_no_send_before_its_text_is_out() -> None:
    """A read may end inside the REPL's prompt (after its marks, before `>>> ` is all out, on a busy machine). A
    send typed then would have the prompt's rest (`>> `) in front of its echo, which is then not recognised and
    stays in the answer. The prompt counts as drawn only at its closing `B` mark."""
    marks = shellmarks.integrate("python3", ["-q", "-i"], {})
    assert marks is not None
    startup = Path(marks.env["PYTHONSTARTUP"]).read_text()
    ps1 = subprocess.run(
        [sys.executable, "-c", startup + "\nimport sys; sys.stdout.write(sys.ps1)"],
        capture_output=True,
        env={**os.environ, "PYTHONSTARTUP": ""},
    ).stdout  # the prompt the REPL prints, from the startup file the REPL is given
    head, tail = ps1[: ps1.index(b">") + 1], ps1[ps1.index(b">") + 1 :]
    assert [m.kind for m in marks.feed(head)] == ["end", "prompt"]
    assert not marks.prompt_drawn  # `>` of `>>> ` is out, the rest is not
    assert [m.kind for m in marks.feed(tail)] == ["input"]
    assert marks.prompt_drawn
    marks.expect_command("print('x')")
    assert [m.kind for m in marks.feed(b"print('x')\r\nx\r\n" + ps1)] == ["end", "prompt", "input"]
    assert marks.output() == "x" and marks.prompt_drawn


def test_a_prompt_before_the_echo_of_a_python_send_is_not_its_end() -> None:
    """The same at the marks: a prompt (`D`, `A`) that comes before the send's echo answers an earlier key."""
    marks = shellmarks.integrate("python3", ["-q", "-i"], {})
    assert marks is not None
    prompt = b"\x1b]133;D\x07\x1b]133;A\x07>>> "
    marks.feed(prompt)
    marks.ctrl_c_written()  # pressed, not yet answered
    marks.expect_command("print('after')")
    assert [m.kind for m in marks.feed(b"\r\nKeyboardInterrupt\r\n" + prompt)] == ["other", "prompt"]
    assert marks.running
    kinds = [m.kind for m in marks.feed(b"print('after')\r\nafter\r\n" + prompt)]
    assert kinds == ["end", "prompt"] and marks.output() == "after" and not marks.running
    # a send interrupted before the REPL read it (Ctrl-C discards the typed line): its prompt still ends it
    marks.expect_command("print('never read')")
    marks.interrupted()
    marks.ctrl_c_written()
    assert [m.kind for m in marks.feed(b"\r\nKeyboardInterrupt\r\n" + prompt)] == ["end", "prompt"]
    # with no Ctrl-C outstanding the echo is not awaited (an echo redrawn otherwise must not hold a send)
    marks.expect_command("print('x')")
    assert [m.kind for m in marks.feed(b"x\r\n" + prompt)] == ["end", "prompt"]
    # a send opening with a blank line: that line's prompt counts as one of its lines, as before
    marks.ctrl_c_written()
    marks.feed(b"\r\nKeyboardInterrupt\r\n" + prompt)  # answered while idle: uses up the press
    marks.expect_command("\nprint(1)")
    assert [m.kind for m in marks.feed(b"\r\n" + prompt)] == ["continuation", "prompt"]
    assert [m.kind for m in marks.feed(b"print(1)\r\n1\r\n" + prompt)] == ["end", "prompt"]


@pytest.mark.asyncio
async def test_python_prompts_run_no_code_that_could_swallow_a_ctrl_c() -> None:
    """The REPL's marked prompts are plain strings. A prompt object whose `__str__` is Python code lets a Ctrl-C
    that lands while the REPL makes its prompt (as a command ends: a repeated press, a key typed through attach)
    raise there, where CPython clears the error: the interrupt is lost and the prompt printed empty, without its
    marks, so the turn never ends but by the session's fallback and the next send is held for good."""
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec)
    try:
        await rec.wait("ready")
        s.send("import sys; print(type(sys.ps1).__name__, type(sys.ps2).__name__)")
        done = await rec.wait("complete")
        assert done["content"] == "str str"
        s.send("if True:\n    print('both prompts')\n")  # ps2 (`...`) still marked: the turn ends once, right
        done = await rec.wait("complete", content="both prompts")
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_a_ctrl_c_the_program_did_not_act_on_is_pressed_again() -> None:
    """A Ctrl-C can reach no process (in a shell loop, one typed just after a job exited signals an empty
    process group; a busy machine widens that gap): the interrupt presses it again while the command still runs.
    Here the REPL swallows the first one on purpose. The turn still ends from the REPL's own prompt, carrying its
    KeyboardInterrupt (not from the session's 10 s fallback, after which the loop would still hold the next send
    forever), and the next send runs."""
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec)
    try:
        await rec.wait("ready")
        s.send(
            "import signal, time; _ = signal.signal(signal.SIGINT, lambda *a: signal.signal(signal.SIGINT, signal.default_int_handler))"
        )
        await rec.wait("complete")
        s.send("while True: print('tick'); time.sleep(0.1)\n")
        turn = [e for e in rec.events if e["event"] == "accepted"][-1]["turn_id"]
        for _ in range(400):
            if any(e["event"] == "replace" and "tick" in e["text"] for e in rec.events):
                break
            await asyncio.sleep(0.05)
        s.interrupt(re="i2")
        ev = await rec.wait("interrupted", turn_id=turn)
        assert ev["re"] == "i2" and "KeyboardInterrupt" in ev["content"], ev
        s.send("print('after')")
        done = await rec.wait("complete", content="after")
        assert done["turn_id"] != turn
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_ready_when_program_prints_nothing() -> None:
    rec = Recorder()
    s = make("cat", [], rec)
    try:
        ready = await rec.wait("ready")
        assert ready["state"] == "idle"  # the state when `ready` is sent
        s.send("hello")
        done = await rec.wait("complete")
        assert done["content"] == "hello", "cat echoes the line once it is entered"
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_bash_turn_ends_when_the_prompt_returns_not_at_a_pause() -> None:
    """Shell integration (OSC 133): a pause inside a command does not end the turn; `complete` carries all of
    its output and the exit status, and the next send works."""
    rec = Recorder()
    s = make("bash", ["--norc", "--noprofile"], rec, env={"PS1": "$ ", "HISTFILE": "/dev/null"})
    try:
        await rec.wait("ready")
        assert s.info()["shell_integration"] == "bash"
        s.send("echo a; sleep 2; echo b")  # quiescence is 0.5 s here: a silence-based end would split it
        done = await rec.wait("complete")
        assert (done["content"], done["exit_code"], done["source"]) == ("a\nb", 0, "screen")
        s.send("ls /nonexistent-dir-xyz")  # may be queued until the prompt is drawn again
        second = [e for e in rec.events if e["event"] == "accepted"][-1]["turn_id"]
        done2 = await rec.wait("complete", turn_id=second)
        assert done2["exit_code"] == 2 and "nonexistent-dir-xyz" in done2["content"]
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_bash_multi_line_send_is_one_turn() -> None:
    """A multi-line send goes in as one bracketed paste: the turn ends after the last line's command (not the
    first), its output holds every line's, and `exit_code` is the last command's."""
    rec = Recorder()
    s = make("bash", ["--norc", "--noprofile"], rec, env={"PS1": "$ ", "HISTFILE": "/dev/null"})
    try:
        await rec.wait("ready")
        s.send("echo a\nsleep 1\necho b\n(exit 4)")
        done = await rec.wait("complete")
        assert (done["content"], done["exit_code"], done["source"]) == ("a\nb", 4, "screen")
        s.send("echo next")
        second = [e for e in rec.events if e["event"] == "accepted"][-1]["turn_id"]
        done2 = await rec.wait("complete", turn_id=second)
        assert (done2["content"], done2["exit_code"]) == ("next", 0)
        ends = [e for e in rec.events if e["event"] in ("complete", "interrupted", "turn_error")]
        assert len(ends) == 2, ends
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_bash_with_the_users_bashrc_keeps_it_and_the_marks(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text('LB_USER_RC=loaded\nPROMPT_COMMAND="true"\nPS1="% "\n')
    rec = Recorder()
    s = make("bash", [], rec, env={"HOME": str(home), "HISTFILE": "/dev/null"})
    try:
        await rec.wait("ready")
        s.send("echo $LB_USER_RC; (exit 3)")
        done = await rec.wait("complete")
        assert (done["content"], done["exit_code"]) == ("loaded", 3)
        assert not (home / ".bashrc").read_text().count("133"), "the user's dotfiles are not touched"
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_unknown_programs_fall_back_to_quiescence_long_enough_for_a_pause() -> None:
    """dash has no hooks: the turn ends on silence, and the default window does not split a 2 s pause."""
    from litbridge.drivers.generic import QUIESCENCE

    rec = Recorder()
    s = make("dash", [], rec, env={"PS1": "$ "}, quiescence=QUIESCENCE)
    try:
        await rec.wait("ready", timeout=30)
        assert s.info()["shell_integration"] is None
        s.send("echo a; sleep 2; echo b")
        done = await rec.wait("complete", timeout=30)
        assert (done["content"], done["source"]) == ("a\nb", "quiescence")
        assert "exit_code" not in done
    finally:
        await s.kill()


@pytest.mark.asyncio
@pytest.mark.parametrize("shell", ["zsh", "fish"])
async def test_zsh_and_fish_marks_where_installed(shell: str, tmp_path) -> None:
    import shutil

    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    rec = Recorder()
    s = make(shell, [], rec, env={"HOME": str(tmp_path)})
    try:
        await rec.wait("ready", timeout=30)
        s.send("echo a; sleep 1; echo b")
        done = await rec.wait("complete", timeout=30)
        assert (done["content"], done["source"], done["exit_code"]) == ("a\nb", "screen", 0)
        s.send("echo c\nsleep 1\necho d")  # multi-line: one paste, one turn
        second = [e for e in rec.events if e["event"] == "accepted"][-1]["turn_id"]
        done2 = await rec.wait("complete", timeout=30, turn_id=second)
        assert (done2["content"], done2["exit_code"]) == ("c\nd", 0)
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_python_repl_streams_the_output_not_the_echoed_input() -> None:
    """Python has no command-start mark: the tty's echo of the typed line comes first, in pieces. Nothing of it
    is streamed as the answer; every `replace` of the turn is a part of the real output."""
    rec = Recorder()
    s = make("python3", ["-q", "-i"], rec, one_byte_reads=True)
    try:
        await rec.wait("ready")
        typed = 'import time; time.sleep(1.5); print("done")'
        s.send(typed)
        turn = [e for e in rec.events if e["event"] == "accepted"][-1]["turn_id"]
        done = await rec.wait("complete", turn_id=turn)
        assert done["content"] == "done"
        for e in rec.events:
            if e["event"] == "replace" and e.get("turn_id") == turn:
                assert e["text"] and "done".startswith(e["text"]), e
                assert "import" not in e["text"] and "sleep" not in e["text"], e
    finally:
        await s.kill()


@pytest.mark.asyncio
async def test_a_send_the_program_answers_late_is_not_ended_by_the_quiet_window() -> None:
    """A program starved of CPU (or one that echoes nothing) can print its answer after more than the quiescence
    window: the window runs from its first output after the send, not from the send, so the turn is not ended
    empty before the program has answered. (A program that never answers ends after SILENT_TURN.)"""
    rec = Recorder()
    # echo off: the program echoes the line itself, late, as a starved one would, then answers
    script = 'stty -echo; read x; sleep 0.8; echo "$x"; echo "got $x"; sleep 60'
    s = make("sh", ["-c", script], rec, quiescence=0.2)
    try:
        await rec.wait("ready", timeout=20)
        s.send("hi")
        done = await rec.wait("complete", timeout=20)
        assert done["content"] == "got hi", rec.story()
    finally:
        await s.kill()


def test_the_quiescence_timer_counts_a_rounded_window_as_elapsed() -> None:
    """`_check` runs at `last + 0.8`, where `now - last` rounds to 0.7999999999999999: it must not reschedule
    itself 1e-16 s later (on a virtual clock that never moves: the replay spun forever)."""
    from types import SimpleNamespace

    from litbridge.drivers.generic import GenericDriver

    last = 0.969472
    later: list[float] = []
    loop = SimpleNamespace(time=lambda: last + 0.8, create_future=lambda: None)
    host = SimpleNamespace(
        loop=loop,
        last_output_at=last,
        spawned_at=0.0,
        call_later=lambda delay, cb: later.append(delay),
    )
    driver = GenericDriver(host, {"quiescence": 0.8})
    fut: asyncio.Future[None] = asyncio.new_event_loop().create_future()
    driver._settled = fut
    driver.settle = 0.8
    driver._check()
    assert later == [] and fut.done()
