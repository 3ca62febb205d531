"""`question_detail_text`: what a client shows of a question's `detail` (a string, or named facts)."""

from __future__ import annotations

import pytest

from litbridge.client.client import question_detail_text


@pytest.mark.parametrize(
    ("detail", "text"),
    [
        ("  Bash command\n\n  touch x.txt\n", "Bash command\n\n  touch x.txt"),
        ({"command": "ls -la", "reason": "", "cwd": None}, "command: ls -la"),
        (None, ""),
        (["not", "a", "detail"], ""),
    ],
)
def test_question_detail_text(detail: object, text: str) -> None:
    assert question_detail_text(detail) == text
