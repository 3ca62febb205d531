"""v2_1 screen rules against the real 2.1.328 captures: state timeline, dialogs, spinner, response text."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from claude_captures import capture, capture_dirs, or_skip, read_screen, screen_files

from litbridge.drivers.claude import model, v2_1
from litbridge.replay import Capture
from litbridge.term import Terminal

R = v2_1.Rules()

# ---------------------------------------------------------------------------------------------- timeline


def _timeline(d: Path) -> list[tuple[float, str]]:
    events = []
    exit_t = None
    for line in (d / "timeline.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*([\d.]+)\s+(\S+)\s+(\S+)", line)
        if not m:
            continue
        t, kind, what = float(m.group(1)), m.group(2), m.group(3)
        if kind == "mode" and what == "?1049l" and exit_t is None:
            exit_t = t  # the CLI is leaving: what pyte shows afterwards is the exit overlay
        if kind == "screen" and (exit_t is None or t < exit_t):
            events.append((t, what))
    return events


def _expected(state: str) -> str:
    if state.startswith("dialog:"):
        return state
    return state.split("(")[0]


@pytest.mark.parametrize("capdir", or_skip(capture_dirs()), ids=lambda p: getattr(p, "name", p))
def test_state_timeline_matches_the_recording(capdir: Path) -> None:
    """Render chunks.jsonl; at every stable point of timeline.txt our state equals the harness's."""
    cap = Capture.load(capdir)
    events = _timeline(capdir)
    term = Terminal(200, 50)
    ci = 0
    checked = 0
    for i, (t, state) in enumerate(events):
        nxt = events[i + 1][0] if i + 1 < len(events) else t + 1.0
        if nxt - t < 0.2:
            continue  # a half-drawn frame; the driver debounces these
        until = t + min(0.1, (nxt - t) / 2)
        while ci < len(cap.chunks) and cap.chunks[ci][0] <= until:
            term.feed(cap.chunks[ci][1])
            ci += 1
        got = R.classify(term.display)
        name = got.state + (":" + got.dialog.kind if got.state == "dialog" and got.dialog else "")
        want = _expected(state)
        checked += 1
        if name == want or (got.state == "blank" and want == "other"):
            continue
        # Our one deliberate divergence: while a draft is typed during a turn the footer hides
        # `esc to interrupt`; the spinner above the box still says busy (the harness said idle).
        if want == "idle" and got.state == "busy" and got.spinner and got.input_text:
            continue
        # The second: the harness files the rewind list (Esc Esc) under `other`; we parse it as a dialog.
        if want == "other" and name == "dialog:rewind" and R.REWIND_SUB in "\n".join(term.display):
            continue
        pytest.fail(f"{capdir.name} t={t}: harness says {state}, we say {name} (footer {got.footer!r})")
    assert checked >= 2


# ---------------------------------------------------------------------------------------------- screens


def _screens_expectations() -> list[tuple[Path, str]]:
    out = []
    for f in screen_files():
        label = f.stem
        if "dialog" in label and "after" not in label and "help" not in label and "model" not in label:
            want = "dialog"
        elif any(k in label for k in ("spinner", "tool_running", "thinking_tick", "before_esc")):
            want = "busy"
        elif any(k in label for k in ("idle", "done", "after_turn")) and "exit" not in label:
            want = "idle"
        else:
            continue
        out.append((f, want))
    return out


@pytest.mark.parametrize(
    ("path", "want"), or_skip(_screens_expectations(), 2), ids=lambda x: getattr(x, "name", x)
)
def test_labelled_screens_classify(path: Path, want: str) -> None:
    _, rows = read_screen(path)
    st = R.classify(rows)
    assert st.state == want, f"{path}: {st.state} (footer {st.footer!r})"


def test_every_screen_classifies_without_error() -> None:
    files = screen_files()
    if not files:
        pytest.skip("capture corpus not available")
    for f in files:
        _, rows = read_screen(f)
        st = R.classify(rows)
        assert st.state in ("blank", "idle", "busy", "dialog", "other")
        if st.state == "busy":
            assert R.BUSY_MARK in st.footer or st.spinner


def test_spinner_line_is_relayed_and_thinking_variant_parsed() -> None:
    _, rows = read_screen(capture("s03") / "screens" / "05_thinking_tick2.txt")
    st = R.classify(rows)
    assert st.state == "busy"
    assert st.spinner is not None and "thinking" in st.spinner and st.spinner.endswith(")")
    assert R.SPINNER_RE.match(st.spinner)
    _, rows = read_screen(capture("s02_") / "screens" / "06_streaming_first_line.txt")
    st = R.classify(rows)
    assert (
        st.state == "busy" and st.spinner is None
    )  # streaming erases the spinner; the footer still says busy


def test_idle_needs_the_nbsp_prompt_not_a_past_prompt() -> None:
    rows = [""] * 50
    rows[5] = "❯ What is the capital of France?"  # a past prompt: normal space
    assert R.find_prompt_row(rows) is None
    assert R.classify(rows).state == "other"
    rows[47] = "❯\u00a0draft"
    rows[46] = rows[48] = "─" * 200
    rows[49] = "  ⏵⏵ auto mode on (shift+tab to cycle)"
    st = R.classify(rows)
    assert st.state == "idle" and st.prompt_row == 47 and st.input_text == "draft"
    rows[49] += " · esc to interrupt"
    assert R.classify(rows).state == "busy"


# ---------------------------------------------------------------------------------------------- dialogs


def _dialog(cap: str, screen: str) -> model.Dialog:
    _, rows = read_screen(capture(cap) / "screens" / screen)
    st = R.classify(rows)
    assert st.state == "dialog", st
    assert st.dialog is not None
    return st.dialog


def test_trust_dialog() -> None:
    d = _dialog("s01a", "01_trust_dialog_initial.txt")
    assert d.kind == "trust"
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "No, exit", True),
        ("2", "Yes, I trust this folder", False),
    ]
    assert "Is this a project you created or one you trust?" in d.text
    assert "/home/dev/work/s01a_startup_dialogs" in d.detail
    target = d.find(label=R.STARTUP_ACCEPT["trust"])
    assert R.cursor_keys(d, target) == ["Down"]
    moved = _dialog("s01a", "02_trust_dialog_cursor_on_yes.txt")
    assert moved.signature() == d.signature()
    assert R.cursor_keys(moved, target) == ["Enter"]


def test_api_key_dialog_default_is_no_and_we_move_up() -> None:
    d = _dialog("s01a", "03_apikey_dialog_initial.txt")
    assert d.kind == "api_key"
    assert d.text == "Do you want to use this API key?"
    assert [(o.label, o.selected) for o in d.options] == [("Yes", False), ("No (recommended)", True)]
    assert "ANTHROPIC_API_KEY" in d.detail
    assert R.cursor_keys(d, d.find(label="Yes")) == ["Up"]


def test_bypass_dialog() -> None:
    d = _dialog("s01d", "05_bypass_dialog_initial.txt")
    assert d.kind == "bypass"
    assert [o.label for o in d.options] == ["No, exit", "Yes, I accept"]
    assert d.text.startswith("WARNING: Claude Code running in Bypass Permissions mode")
    assert R.cursor_keys(d, d.find(label="Yes, I accept")) == ["Down"]
    assert R.cursor_keys(_dialog("s01d", "06_bypass_dialog_on_accept.txt"), 1) == ["Enter"]


def test_tool_permission_dialogs() -> None:
    d = _dialog("s04a", "02_t1_bash_permission_dialog.txt")
    assert d.kind == "permission"
    assert d.text == "Do you want to proceed?"
    assert [o.digit for o in d.options] == ["1", "2", "3", "4"]
    assert d.options[0].label == "Yes" and d.options[0].selected
    assert d.options[3].label == "No"
    assert "touch created_by_bash.txt && echo hi" in d.detail
    assert "Bash command" in d.detail
    assert d.find(digit=4) == 3 and d.find(label="no") == 3
    w = _dialog("s04a", "05_t2_write_permission_dialog.txt")
    assert w.text == "Do you want to create hello.py?"
    assert [o.label for o in w.options][0::2] == ["Yes", "No"]
    assert "print('hello world')" in w.detail
    e = _dialog("s04a", "06_t2_edit_permission_dialog.txt")
    assert e.text == "Do you want to make this edit to hello.py?"
    moved = _dialog("s04a", "03_t1_bash_dialog_cursor_down.txt")
    assert moved.selected_index() == 1 and moved.signature() == d.signature()


def test_auto_mode_fallback_dialogs() -> None:
    d = _dialog("s04b", "02_step0_auto_mode_cannot_check_dialog.txt")
    assert d.kind == "auto_mode_unavailable"
    assert R.cursor_keys(d, 0) == ["Enter"]
    assert R.cursor_keys(d, 1) == ["BTab"]
    p = _dialog("s04b", "04_step1_permission_dialog.txt")
    assert p.kind == "permission"
    assert [(o.digit, o.label, o.selected) for o in p.options] == [("1", "No", True), ("2", "Yes", False)]
    assert R.cursor_keys(p, p.find(label="Yes")) == ["Down"]


def test_unknown_picker_is_a_choice_not_a_startup_dialog() -> None:
    rows = [""] * 50
    rows[40] = "─" * 200
    rows[41] = " Which flavour?"
    rows[42] = " ❯ 1. Vanilla"
    rows[43] = "   2. Chocolate"
    rows[45] = " Enter to confirm · Esc to cancel"
    d = R.parse_dialog(rows)
    assert d is not None and d.kind == "choice"
    assert d.text == "Which flavour?"
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "Vanilla", True),
        ("2", "Chocolate", False),
    ]
    assert d.kind not in R.STARTUP_ACCEPT


def test_dialog_text_quoted_above_a_live_prompt_is_not_a_dialog() -> None:
    rows = [""] * 50
    rows[10] = "● The footer says Enter to confirm · Esc to cancel"
    rows[11] = "  ❯ 1. like this"
    rows[12] = "    2. and this"
    rows[46] = rows[48] = "─" * 200
    rows[47] = "❯\u00a0"
    rows[49] = "  ⏵⏵ auto mode on (shift+tab to cycle)"
    assert R.classify(rows).state == "idle"


def test_header_info() -> None:
    _, rows = read_screen(capture("s02_") / "screens" / "01_idle_before.txt")
    assert R.header_info(rows) == ("2.1.328", "Opus 5.5")


# ---------------------------------------------------------------------------------------------- response


def _transcript_texts(capdir: Path) -> list[str]:
    out = []
    for f in sorted((capdir / "transcripts").glob("*/*.jsonl")):
        for line in f.read_bytes().splitlines():
            e = orjson.loads(line)
            if e.get("type") == "assistant":
                for b in e["message"]["content"]:
                    if b.get("type") == "text":
                        out.append(b["text"])
    return out


def test_markdown_response_extraction() -> None:
    capdir = capture("s03")
    _, rows = read_screen(capdir / "screens" / "02_markdown_done.txt")
    start = R.find_turn_start(rows, "show me all the markdown features")
    assert start is not None
    text = R.extract_response(rows, start)
    lines = text.split("\n")
    source = _transcript_texts(capdir)[0]
    paragraph = next(p for p in source.split("\n\n") if p.startswith("This paragraph"))
    assert paragraph in lines  # three wrapped rows rejoined into the exact paragraph
    bullet2 = next(x for x in source.splitlines() if x.startswith("- Second bullet"))
    assert bullet2 in lines  # a wrapped list item rejoined, with its marker
    assert "  - Nested bullet under the second item" in lines
    assert "1. Numbered one" in lines and "2. Numbered two" in lines  # list items never merge
    code = next(x for x in source.splitlines() if x.startswith("def very_long_function_name"))
    assert code in lines
    assert next(x for x in source.splitlines() if x.startswith("    return {")) in lines  # verbatim indent
    assert "│         Column A         │ Column B │ Column C │" in lines
    assert lines.count("├──────────────────────────┼──────────┼──────────┤") == 3
    assert lines[0] == "Heading level one"
    assert not any(x.startswith(("✻", "❯", "●", "─")) for x in lines)  # chrome removed
    assert "Cooked" not in text and "Baked" not in text


def test_response_never_includes_the_previous_turn() -> None:
    _, rows = read_screen(capture("s02_") / "screens" / "10_idle_after_turn2.txt")
    start = R.find_turn_start(rows, "And of Germany?")
    assert R.extract_response(rows, start) == "Berlin."
    first = R.find_turn_start(rows, "What is the capital of France?")
    assert first is not None and first < start


def test_tool_chrome_is_not_response_text() -> None:
    _, rows = read_screen(capture("s04a") / "screens" / "07_t2_idle.txt")
    start = R.find_turn_start(rows, "read notes, write hello.py, then edit it")
    text = R.extract_response(rows, start)
    assert text.split("\n\n") == [
        "Reading the notes file.",
        "Now writing a new file.",
        "Now editing it.",
        "All three steps are done: read, write, edit.",
    ]


def test_scrolled_off_prompt_long_answer() -> None:
    capdir = capture("s03")
    _, rows = read_screen(capdir / "screens" / "13_very_long_done.txt")
    assert R.find_turn_start(rows, "now a very long answer") is None  # scrolled away
    text = R.extract_response(rows, None)
    source = _transcript_texts(capdir)[-1]
    paras = text.split("\n\n")
    assert len(paras) >= 5
    for p in paras[1:]:  # the first visible one may be cut at the top edge
        assert p in source.split("\n\n"), p[:80]


def test_reflow_rules() -> None:
    w = 40
    rows = ["  " + "a" * 30 + " bbbbbbb", "  cc dd", "  short", "  next line stays separate"]
    out = R.reflow(rows, cols=w)
    assert out == ["  " + "a" * 30 + " bbbbbbb cc dd", "  short", "  next line stays separate"]
    boxed = ["  ┌──┐", "  │ab│", "  └──┘"]
    assert R.reflow(boxed, cols=w) == boxed


def test_placeholders_are_not_a_draft() -> None:
    rows = [""] * 50
    rows[46] = rows[48] = "─" * 200
    rows[49] = "  ⏵⏵ auto mode on (shift+tab to cycle)"
    for text, draft in (
        ("Resend your message to try again", ""),
        ("Press up to edit queued messages", ""),
        ("half a sentence", "half a sentence"),
    ):
        rows[47] = "❯\u00a0" + text
        st = R.classify(rows)
        assert st.state == "idle" and st.input_text == text and st.draft == draft


def test_prose_that_starts_like_a_tool_summary_is_kept() -> None:
    rows = [""] * 50
    rows[5] = "❯ do it"
    rows[7] = "● Done."
    rows[9] = "  Updated the config as requested, and ran the tests."
    rows[11] = "  Ran 1 shell command"
    rows[13] = "● Reading the file was enough."
    rows[46] = rows[48] = "─" * 200
    rows[47] = "❯\u00a0"
    rows[49] = "  ⏵⏵ auto mode on (shift+tab to cycle)"
    assert R.extract_response(rows, 5).split("\n\n") == [
        "Done.",
        "Updated the config as requested, and ran the tests.",
        "Reading the file was enough.",
    ]


@pytest.mark.parametrize("name", ["s09c", "s10"])
def test_screen_agrees_with_the_osc7501_reports(name: str) -> None:
    """Where Claude reported its state over OSC 7501, the screen says the same once it has settled."""
    capdir = capture(name)
    cap = Capture.load(capdir)
    reports = []
    for line in (capdir / "timeline.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*([\d.]+)\s+osc7501\s+state=(\w+)", line)
        if m:
            reports.append((float(m.group(1)), m.group(2)))
    want = {"working": "busy", "idle": "idle", "done": "idle", "blocked": "dialog"}
    term = Terminal(200, 50)
    ci = 0
    checked = 0
    for i, (t, state) in enumerate(reports):
        nxt = reports[i + 1][0] if i + 1 < len(reports) else t + 5
        if state not in want or nxt - t < 0.6:
            continue
        until = t + 0.5  # the screen follows the report within a few hundred ms
        while ci < len(cap.chunks) and cap.chunks[ci][0] <= until:
            term.feed(cap.chunks[ci][1])
            ci += 1
        got = R.classify(term.display)
        assert got.state == want[state], (t, state, got.state, got.footer)
        if state == "blocked":
            assert got.dialog is not None and got.dialog.kind in ("trust", "permission")
        checked += 1
    assert checked >= 4


def test_turn_start_accepts_claudes_paste_placeholder() -> None:
    rows = [""] * 50
    rows[3] = "❯ an older prompt"
    rows[5] = "● old answer"
    rows[7] = "❯ [Pasted text #1 +3 lines]"
    rows[9] = "● new answer"
    rows[46] = rows[48] = "─" * 200
    rows[47] = "❯\u00a0"
    rows[49] = "  ⏵⏵ auto mode on (shift+tab to cycle)"
    assert R.find_turn_start(rows, "line one\nline two\n\nline four") == 7
    assert R.extract_response(rows, 7) == "new answer"
    assert R.find_turn_start(rows, "an older prompt") == 3


def test_rewind_list_is_a_question_with_one_option_per_entry() -> None:
    rows = read_screen(capture("s06_") / "screens" / "18_f_after_double_esc.txt")[1]
    st = R.classify(rows)
    assert st.state == "dialog" and st.dialog is not None and st.dialog.kind == "rewind"
    d = st.dialog
    assert d.text.startswith("Rewind: Restore the code and/or conversation to the point before")
    assert [(o.digit, o.label, o.selected) for o in d.options] == [
        ("1", "stream slowly (to be interrupted by Esc)", False),
        ("2", "stream slowly (to be interrupted by Ctrl+C)", False),
        ("3", "run a slow command", False),
        ("4", "first message (slow)", False),
        ("5", "second message typed while busy", False),
        ("6", "(current)", True),
    ]
    assert "1. stream slowly (to be interrupted by Esc) — No code changes" in d.detail  # descriptions kept
    assert R.cursor_keys(d, 4) == ["Up"] and R.cursor_keys(d, 5) == ["Enter"]
    # the cursor on an entry: its description row stays out of the labels
    moved = list(rows)
    y = next(i for i, r in enumerate(moved) if r.strip() == "second message typed while busy")
    moved[y] = "  ❯ second message typed while busy"
    moved = [("    (current)" if r.strip() == "❯ (current)" else r) for r in moved]
    d2 = R.parse_dialog(moved)
    assert d2 is not None and d2.kind == "rewind" and d2.selected_index() == 4
    assert d2.signature() == d.signature()  # the same dialog for the driver while the cursor moves
    # `Rewind` quoted in a conversation above a live prompt is not the list
    idle = read_screen(capture("s06_") / "screens" / "19_f_after_esc_close.txt")[1]
    assert R.classify(idle).state == "idle"


# ---------------------------------------------------------------------------------------------- incremental reading


def _frames(capdir: Path) -> list[list[str]]:
    """Every distinct frame of a recording, chunk by chunk, as the terminal hands it to the rules."""
    cap = Capture.load(capdir)
    term = Terminal(200, 50)
    frames, gen = [], None
    for _, data in cap.chunks:
        term.feed(data)
        if term.generation != gen:
            gen = term.generation
            frames.append(term.display)
    return frames


@pytest.mark.parametrize("capdir", or_skip(capture_dirs()), ids=lambda p: getattr(p, "name", p))
def test_a_frame_read_from_the_last_one_reads_as_a_fresh_frame(capdir: Path) -> None:
    """One rules instance reads a recording frame after frame (most frames from the previous reading); every
    reading equals a fresh instance's full read of the same frame, and the incremental path is taken."""
    rules = v2_1.Rules()
    taken = 0
    for rows in _frames(capdir):
        before = rules._last_frame
        got = rules.classify(rows)
        taken += before is not None and rules._last_frame is not None and rules._last_frame[0] is got
        assert got == v2_1.Rules().classify(rows)
    assert taken > 0 or len(_frames(capdir)) < 20


def reread(rules: v2_1.Rules, rows: list[str]) -> object:
    """`_reclassify` of `rows` from the last frame's reading (what `classify` tries first), `rows`' facts taken."""
    last = rules._last_frame
    assert last is not None
    ff = rules._facts()
    ff.update(rows)
    return rules._reclassify(rows, ff, *last)


def test_a_changed_row_rereads_what_it_shows() -> None:
    """The spinner row, the input line and a conversation row change between two frames: the reading from the
    last frame has the new spinner text and draft; a row that becomes chrome (a dialog footer) is a full read."""
    rows = [
        "● earlier answer",
        "",
        "✶ Pondering… (3s · ↓ 2 tokens)",
        "─" * 40,
        "❯\u00a0hel",
        "─" * 40,
        "  ? for shortcuts",
    ]
    rules = v2_1.Rules()
    first = rules.classify(rows)
    assert first.state == "busy" and first.draft == "hel" and rules._last_frame is not None
    answer = list(rows)
    answer[0] = "● earlier answer, streaming"
    assert reread(rules, answer) is first  # a row of the answer changes nothing the reading holds
    rules.classify(rows)
    later = list(rows)
    later[0] = "● earlier answer, longer"
    later[2] = "✶ Pondering… (4s · ↓ 9 tokens)"
    later[4] = "❯\u00a0hello"
    assert reread(rules, later) == v2_1.Rules().classify(later)
    got = rules.classify(later)
    assert (got.spinner, got.draft, got.state) == ("✶ Pondering… (4s · ↓ 9 tokens)", "hello", "busy")
    footer = list(later)
    footer[0] = "Esc to cancel"
    assert reread(rules, footer) is None
    assert rules.classify(footer) == v2_1.Rules().classify(footer)


def test_a_reading_from_the_last_frame_rereads_footer_version_and_spinner_stop() -> None:
    """What a changed row can still change is read again: the footer below the box (busy when it says `esc to
    interrupt`), the logo's version; a conversation row above the spinner's row may turn from blank to text or
    into a `●` row without a full read, one below it may not (the spinner scan would stop there)."""
    rows = [
        " ▐▛███▜▌   Claude Code v2.1.328",
        "",
        "● earlier answer",
        "",
        "✶ Pondering… (3s · ↓ 2 tokens)",
        "",
        "─" * 40,
        "❯\u00a0",
        "─" * 40,
        "  ? for shortcuts",
    ]
    rules = v2_1.Rules()
    first = rules.classify(rows)
    assert first.version == "2.1.328" and first.footer == "? for shortcuts"
    assert rules._last_frame is not None
    cases = {
        "footer": (9, "  esc to interrupt", True),
        "logo, same version": (0, " ▐▛███▜▌   Claude Code v2.1.328 ", True),
        "logo, other version": (0, " ▐▛███▜▌   Claude Code v2.1.329", False),
        "text above the spinner": (1, "a new line of the answer", True),
        "a bullet above the spinner": (3, "● Next", True),
        "a bullet below the spinner": (5, "● Next", False),
    }
    for name, (y, text, incremental) in cases.items():
        later = list(rows)
        later[y] = text
        got = reread(rules, later)
        want = v2_1.Rules().classify(later)
        if incremental:
            assert got == want, name
        else:
            assert got is None, name
        rules.classify(rows)  # back to the first frame for the next case
    later = list(rows)
    later[9] = "  esc to interrupt"
    later[4] = ""
    got = reread(rules, later)
    assert got is None  # the spinner row went blank: its scan kind changed at the stop
    assert rules.classify(later).state == "busy"  # the footer says busy


def test_spinner_frames_reuse_the_extracted_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row after the content's end is most often the spinner, redrawn every frame: all the answer reads of
    it is whether it starts with `⎿` (a block head's tool result), so a new spinner text reuses the last
    extraction and a `⎿` there is a new one (the block became a tool call)."""
    rules = v2_1.Rules()
    calls = []
    real = v2_1.Rules._extract
    monkeypatch.setattr(v2_1.Rules, "_extract", lambda self, *a: calls.append(a) or real(self, *a))
    rows = ["❯ question", "", "● Bash(ls)", "", "✶ Pondering… (3s)", "", "─" * 40, "❯\u00a0", "─" * 40]
    first = rules.extract_response(rows, 0)
    assert len(calls) == 1
    rows[4] = "✶ Pondering… (4s · ↓ 9 tokens)"
    assert rules.extract_response(rows, 0) == first and len(calls) == 1
    rows[4] = "  ⎿  file.txt"
    fresh = v2_1.Rules().extract_response(rows, 0)
    assert rules.extract_response(rows, 0) == fresh and len(calls) == 3
