"""The model Gemini CLI 0.61 names in its footer, below the `/model` heading, on the recorded screens."""

from __future__ import annotations

import pytest
from gemini_helpers import FIXTURES

from litbridge.drivers.gemini import v0_61


def screen(name: str) -> list[str]:
    return (FIXTURES / "screens" / f"{name}.txt").read_text(encoding="utf-8").split("\n")


@pytest.mark.parametrize(
    "name",
    ["gemini_first_start__04_idle", "gemini_plain_qa__02_q1_busy", "gemini_tool_approval__05_after_esc"],
)
def test_footer_names_the_model(name: str) -> None:
    assert v0_61.Rules().footer_model(screen(name)) == "Auto"


@pytest.mark.parametrize(
    "name", ["gemini_first_start__02_trust_dialog_quiet", "gemini_tool_approval__01_approval_1"]
)
def test_no_footer_under_a_dialog(name: str) -> None:
    assert v0_61.Rules().footer_model(screen(name)) is None


def test_a_model_given_with_model_flag() -> None:
    rows = screen("gemini_first_start__04_idle")
    i = next(i for i, r in enumerate(rows) if r.rstrip().endswith("/model"))
    value = rows[i + 1].rstrip()
    rows[i + 1] = value[: len(value) - len("gemini-2.5-flash")] + "gemini-2.5-flash"
    assert v0_61.Rules().footer_model(rows) == "gemini-2.5-flash"
