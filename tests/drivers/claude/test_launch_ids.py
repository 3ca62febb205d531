"""The session id names the transcript file (`<project>/<id>.jsonl`): only a UUID is ever used as one, so a
client-chosen id cannot point the transcript tailer outside Claude's own project folder."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from litbridge.drivers.claude.launch import is_uuid, plan_args


def test_a_fresh_session_is_pinned_to_a_new_uuid(tmp_path: Path) -> None:
    plan = plan_args([], None, None, tmp_path)
    assert plan.session_id is not None and is_uuid(plan.session_id)
    assert plan.args == ["--session-id", plan.session_id] and plan.resumed is False


def test_an_explicit_uuid_session_id_is_kept(tmp_path: Path) -> None:
    sid = str(uuid.uuid4())
    assert plan_args(["--session-id", sid], None, None, tmp_path).session_id == sid


@pytest.mark.parametrize("bad", ["../../etc/passwd", "abc", "/tmp/x", "6f1c" * 8 + "/.."])
def test_a_session_id_that_is_not_a_uuid_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="not a UUID"):
        plan_args(["--session-id", bad], None, None, tmp_path)
    with pytest.raises(ValueError, match="not a UUID"):
        plan_args([], bad, None, tmp_path)  # a resume token too


def test_an_empty_session_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a UUID"):
        plan_args(["--session-id", ""], None, None, tmp_path)


def test_resume_with_a_search_term_pins_nothing(tmp_path: Path) -> None:
    """`--resume <term>` opens Claude's picker: no transcript can be pinned from the term."""
    plan = plan_args(["--resume", "../fix the bug"], None, None, tmp_path)
    assert plan.resumed is True and plan.session_id is None
    sid = str(uuid.uuid4())
    assert plan_args([f"--resume={sid}"], None, None, tmp_path).session_id == sid
