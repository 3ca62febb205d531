"""The state-accuracy benchmark's metric on timelines whose answer is known, and its hard property on every recording:
litbridge never goes idle while the CLI's own record says a turn is running (`benchmarks/bench_accuracy.py`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "litbridge_bench_accuracy", ROOT / "benchmarks" / "bench_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


acc = _load()
I, W, Q = acc.IDLE, acc.WORKING, acc.QUESTION  # noqa: E741 (the three states, as in the tables)


def test_score_on_a_known_timeline() -> None:
    """Every figure worked out by hand: a 0.2 s late start, a 0.5 s idle mid-turn, a late question, a question shown
    0.1 s after it was answered, a late end, and a dialog shown while nothing was asked."""
    truth = acc.truth_timeline([(1.0, 6.0)], [(3.0, 4.0)])
    assert truth == [(float("-inf"), I), (1.0, W), (3.0, Q), (4.0, W), (6.0, I)]
    got = [(0.0, I), (1.2, W), (2.0, I), (2.5, W), (3.3, Q), (4.1, W), (6.2, I), (7.0, Q)]
    sc = acc.score(truth, got, 1.0, 8.0)
    assert sc.window == pytest.approx(7.0)
    assert sc.right == pytest.approx(0.8 + 0.5 + 0.7 + 1.9 + 0.8)
    # idle 1.0-1.2 is detection delay (idle since before the turn), 2.0-2.5 is litbridge going idle mid-turn
    assert (sc.false_idle, sc.false_idle_spans) == (pytest.approx(0.5), 1)
    assert (sc.false_question, sc.false_question_spans) == (pytest.approx(0.1 + 1.0), 2)
    assert sc.delays[(I, W)] == [pytest.approx(0.2)]
    assert sc.delays[(W, Q)] == [pytest.approx(0.3)]
    assert sc.delays[(Q, W)] == [pytest.approx(0.1)]
    assert sc.delays[(W, I)] == [pytest.approx(0.2)]
    assert sum(sc.missed.values()) == 0
    assert sc.turns == 1


def test_early_missed_and_late_detections() -> None:
    """Shown before the record's stamp: negative delay; a turn shorter than the delay: seen late, not missed; a
    question never shown: missed (and its answer with it)."""
    truth = acc.truth_timeline([(1.0, 1.1), (3.0, 6.0)], [(4.0, 5.0)])
    got = [(0.0, I), (0.95, W), (1.3, I), (3.2, W), (6.1, I)]
    sc = acc.score(truth, got, 1.0, 7.0)
    assert sc.delays[(I, W)] == [pytest.approx(-0.05), pytest.approx(0.2)]
    assert sc.delays[(W, I)] == [pytest.approx(0.2), pytest.approx(0.1)]
    assert sc.missed[(W, Q)] == 1 and sc.delays[(W, Q)] == []
    # litbridge never left working: in the right state when the answer came, counted from the question's start
    assert sc.delays[(Q, W)] == [pytest.approx(4.0 - 5.0)]
    assert sc.false_idle == 0
    assert sc.right == pytest.approx(
        6.0 - 0.2 - 0.2 - 1.0 - 0.1
    )  # late end, late start, missed question, late end


def test_truth_from_record_marks() -> None:
    """A tool call with an answering key is a question up to that key; one without is work; a turn the record
    never ends before the next user entry leaves an unscored gap."""
    m = acc.Mark
    marks = [
        m(1.0, "turn_start"),
        m(1.5, "tool_start", "a"),
        m(1.7, "tool_end", "a"),  # no key: auto-approved
        m(2.0, "tool_start", "b"),
        m(3.0, "tool_end", "b"),
        m(4.0, "turn_end"),
        m(5.0, "turn_start"),
        m(5.5, "tool_start", "c"),  # the record says nothing more about this turn
        m(8.0, "turn_start"),
    ]
    truth = acc.intervals(marks, keys=[2.4, 2.6, 9.0], end=10.0)
    assert truth.turns == [(1.0, 4.0), (5.0, 5.5), (8.0, 10.0)]
    assert truth.questions == [(2.0, 2.6)]
    assert truth.unknown == [(5.5, 8.0)]
    tl = truth.timeline()
    assert tl[1:] == [(1.0, W), (2.0, Q), (2.6, W), (4.0, I), (5.0, W), (5.5, None), (8.0, W), (10.0, I)]
    # the unknown stretch is not scored, whatever litbridge said in it
    sc = acc.score(tl, [(0.0, W), (5.6, I), (7.9, W)], 1.0, 10.0)
    assert sc.window == pytest.approx(10.0 - 1.0 - 2.5)
    assert sc.false_idle == 0


@pytest.mark.parametrize(
    ("cli", "name", "turns", "questions"),
    [("pi", "pi_tool", 1, 0), ("pi", "pi_interrupt", 2, 0), ("kimi", "kimi_tool_approval", 1, 1)],
)
def test_pi_and_kimi_truth_from_their_records(cli: str, name: str, turns: int, questions: int) -> None:
    """Pi's session file and Kimi's wire log give each turn's start and end; Kimi's approval (answered by the
    recorder's `1`) is a question from its request to that key, Pi's tool call (never asked) is work."""
    from litbridge.replay import Capture

    truth, _end = acc.truth_of(Capture.load(acc.CAPTURES / cli / name), cli)
    assert len(truth.turns) == turns and truth.unknown == []
    assert len(truth.questions) == questions
    for q0, q1 in truth.questions:
        assert any(t0 < q0 < q1 < t1 for t0, t1 in truth.turns)


@pytest.mark.parametrize(
    ("name", "questions"), [("opencode_plain_qa", 0), ("opencode_approval", 1), ("opencode_interrupt", 0)]
)
def test_opencode_truth_from_its_event_rows(name: str, questions: int) -> None:
    """opencode's recorded `event` rows give each turn's start (the user message) and end (the assistant message
    that completes it, an abort included); its permission (answered by the recorder's Enter) is a question from the
    tool part to that key."""
    from litbridge.replay import Capture

    truth, end = acc.truth_of(Capture.load(acc.CAPTURES / "opencode" / name), "opencode")
    assert len(truth.turns) == 1 and truth.unknown == []
    assert 0 < truth.turns[0][0] < truth.turns[0][1] < end
    assert len(truth.questions) == questions
    for q0, q1 in truth.questions:
        assert any(t0 < q0 < q1 < t1 for t0, t1 in truth.turns)


def test_qwen_truth_from_its_chat_file() -> None:
    """Qwen's chat file: the approved call is a question up to the recorder's `1`, the denied one up to its `4`
    and its `cancelled` result ends that turn; the cancelled answer and the 400 (its own `api_error`, nothing after
    it) end theirs, so no stretch is left unknown; the memory extraction after a turn is no turn."""
    from litbridge.replay import Capture

    def truth(name: str) -> acc.Truth:
        return acc.truth_of(Capture.load(acc.CAPTURES / "qwen" / name), "qwen")[0]

    approval, errors, answer = truth("qwen_approval"), truth("qwen_interrupt_error"), truth("qwen_answer")
    assert (len(approval.turns), len(approval.questions), approval.unknown) == (2, 2, [])
    assert all(any(t0 < q0 < q1 < t1 for t0, t1 in approval.turns) for q0, q1 in approval.questions)
    assert (len(errors.turns), errors.unknown) == (3, [])
    assert errors.turns[1][1] - errors.turns[1][0] < 1.0  # the 400 came 0.4 s after the prompt
    assert (len(answer.turns), answer.unknown) == (2, [])


def _recordings() -> list[object]:
    return [
        pytest.param(cli, path, id=f"{cli}/{path.name}") for cli in acc.CLIS for path in acc.recordings(cli)
    ]


@pytest.mark.parametrize(("cli", "path"), _recordings())
def test_no_false_idle_during_a_turn(cli: str, path: Path) -> None:
    result = acc.measure(path, cli)
    if result.score is None:
        pytest.skip("the record holds no turn (start-up / exit capture)")
    assert result.score.false_idle == 0 and result.score.false_idle_spans == 0, (result.truth, result.got)
