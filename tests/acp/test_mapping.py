"""The translation rules of `litbridge acp`, without a daemon: streamed text deltas (a property: the chunks
joined are the final text), tool kinds from tool names, permission-option kinds from option labels, the
client's MCP servers as Claude Code's `--mcp-config`, todo-list tool calls as plan entries, multiple-choice
questions as elicitation forms, the transcript's reasoning and echoed prompts as the session's updates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litbridge.acp.mapping import (
    REVISED,
    TextDeltas,
    choice_schema,
    option_kinds,
    plan_entries,
    streams_text,
    tool_kind,
)


def _stream(replaces: list[str], final: str) -> list[str]:
    d = TextDeltas()
    chunks = [d.replace(t) for t in replaces]
    chunks.append(d.finish(final))
    return chunks


@st.composite
def _turn(draw: st.DrawFn) -> tuple[list[str], str]:
    """A final text and `replace` texts that are prefixes of it, in any order (growing, shrinking, repeated:
    what a screen-scraped or transcript-read turn may show on its way to the final text)."""
    final = draw(st.text(alphabet="ab \n", max_size=30))
    cuts = draw(st.lists(st.integers(0, len(final)), max_size=12))
    return [final[:n] for n in cuts], final


@given(_turn())
def test_chunks_joined_are_the_final_text(turn: tuple[list[str], str]) -> None:
    replaces, final = turn
    chunks = _stream(replaces, final)
    assert "".join(chunks) == final
    assert REVISED not in "".join(chunks)


@given(st.lists(st.text(alphabet="ab\n", max_size=8), max_size=10), st.text(alphabet="ab\n", max_size=12))
def test_never_resends_and_says_when_the_text_was_revised(replaces: list[str], final: str) -> None:
    """Any sequence at all: each chunk only extends what was sent, and what was sent is always one of the
    texts the CLI showed; the joined chunks equal the final text unless what was streamed is not a prefix of
    it, in which case the revision is announced."""
    chunks = _stream(replaces, final)
    for i, chunk in enumerate(chunks[:-1]):
        if chunk:  # what the editor shows is always a text the CLI showed: never a mix of two
            assert "".join(chunks[: i + 1]) == replaces[i]
    joined = "".join(chunks)
    streamed = "".join(chunks[:-1])
    if final.startswith(streamed):
        assert joined == final
    else:
        assert chunks[-1] == REVISED + final


def test_a_rewrite_holds_the_stream_until_the_end() -> None:
    d = TextDeltas()
    assert d.replace("Hello") == "Hello"
    assert d.replace("Hello wor") == " wor"
    assert d.replace("Hello world") == "ld"
    assert d.replace("Hello world") == ""
    assert d.replace("Hi") == ""  # not an extension: held
    assert d.replace("Hello world, again") == ""  # still held until the end
    assert d.finish("Hello world, again!") == ", again!"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Bash", "execute"),
        ("shell", "execute"),
        ("run_shell_command", "execute"),
        ("Read", "read"),
        ("read_file", "read"),
        ("Edit", "edit"),
        ("MultiEdit", "edit"),
        ("Write", "edit"),
        ("apply_patch", "edit"),
        ("Grep", "search"),
        ("Glob", "search"),
        ("WebSearch", "search"),
        ("WebFetch", "fetch"),
        ("web_fetch", "fetch"),
        ("TodoWrite", "other"),
        ("Task", "other"),
        ("ask_user", "other"),
        ("mcp__litbridge__send", "other"),
    ],
)
def test_tool_kind(name: str, kind: str) -> None:
    assert tool_kind(name) == kind


@pytest.mark.parametrize(
    ("labels", "kinds"),
    [
        (
            [
                "Yes",
                "Yes, allow all edits during this session (shift+tab)",
                "No, and tell Claude what to do differently (esc)",
            ],
            ["allow_once", "allow_always", "reject_once"],
        ),
        (
            [
                "Yes, proceed",
                "Yes, and don't ask again for this command",
                "No, and tell Codex what to do differently",
            ],
            ["allow_once", "allow_always", "reject_once"],
        ),
        (["yes", "no"], ["allow_once", "reject_once"]),
        (
            ["Allow once", "Always allow", "Deny", "Never allow"],
            ["allow_once", "allow_always", "reject_once", "reject_always"],
        ),
        (["red", "blue"], ["allow_once", "allow_once"]),
        (["Yes, always"], ["allow_once"]),  # the first positive option is allow_once
    ],
)
def test_option_kinds(labels: list[str], kinds: list[str]) -> None:
    assert option_kinds(labels) == kinds


def test_mcp_servers_reach_claude_as_mcp_config() -> None:
    """session/new's `mcpServers` (stdio, HTTP and SSE) become Claude Code's `--mcp-config` JSON; other CLIs get
    none."""
    from acp import schema as S

    from litbridge.acp.agent import _mcp_args

    servers = [
        S.McpServerStdio(
            name="fs", command="/bin/mcp-fs", args=["--root", "/x"], env=[S.EnvVariable(name="K", value="V")]
        ),
        S.HttpMcpServer(
            type="http", name="web", url="https://h/mcp", headers=[S.HttpHeader(name="A", value="b")]
        ),
        S.SseMcpServer(type="sse", name="events", url="https://h/sse", headers=[]),
    ]
    flag, config = _mcp_args("/opt/bin/claude", servers)
    assert flag == "--mcp-config"
    assert json.loads(config) == {
        "mcpServers": {
            "fs": {"command": "/bin/mcp-fs", "args": ["--root", "/x"], "env": {"K": "V"}},
            "web": {"type": "http", "url": "https://h/mcp", "headers": {"A": "b"}},
            "events": {"type": "sse", "url": "https://h/sse", "headers": {}},
        }
    }
    assert _mcp_args("bash", servers) == [] and _mcp_args("claude", []) == []


def test_todowrite_is_a_plan() -> None:
    """Claude Code's TodoWrite input (the whole list each time) becomes ACP plan entries, statuses as they are."""
    todos = {
        "todos": [
            {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
            {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
        ]
    }
    assert plan_entries("TodoWrite", todos) == [
        {"content": "Read the code", "status": "completed", "priority": "medium"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "medium"},
        {"content": "Run the tests", "status": "pending", "priority": "medium"},
    ]
    # an item's own valid priority is kept; an unknown status is pending; items without text are left out
    odd = {
        "todos": [{"content": "x", "status": "blocked", "priority": "high"}, {"status": "pending"}, "junk"]
    }
    assert plan_entries("TodoWrite", odd) == [{"content": "x", "status": "pending", "priority": "high"}]
    assert plan_entries("TodoWrite", {"todos": []}) == []  # the list emptied: an empty plan


def test_codex_update_plan_is_a_plan() -> None:
    plan = {
        "explanation": "Two steps",
        "plan": [{"step": "Inspect", "status": "completed"}, {"step": "Patch", "status": "in_progress"}],
    }
    assert plan_entries("update_plan", plan) == [
        {"content": "Inspect", "status": "completed", "priority": "medium"},
        {"content": "Patch", "status": "in_progress", "priority": "medium"},
    ]


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("Bash", {"command": "ls"}),
        ("TodoWrite", {"todos": "not a list"}),
        ("TodoWrite", None),
        ("update_plan", {"steps": []}),
        ("TodoRead", {}),
    ],
)
def test_other_calls_are_no_plan(name: str, tool_input: object) -> None:
    assert plan_entries(name, tool_input) is None


def test_choice_schema_is_a_valid_elicitation_form() -> None:
    """One required string, its titled one-of values the options' digits (what `answer` takes)."""
    from acp import schema as S

    form = S.ElicitationSchema.model_validate(choice_schema(["red", "blue"], ["1", "2"]))
    prop = form.properties["choice"]
    assert form.required == ["choice"] and prop.type == "string"
    assert [(o.const, o.title) for o in prop.one_of] == [("1", "red"), ("2", "blue")]


def test_screen_read_drivers_are_not_streamed_but_raw_text_is() -> None:
    """Claude Code, Codex and Gemini draw markdown (`**Paris**` shows as `Paris`): their screen text is never a
    prefix of the transcript's, so streaming it would end in a revision instead of the exact text. A shell's or
    rift's text is the text itself."""
    for driver in ("claude", "codex", "gemini"):
        assert not streams_text(driver)
    for driver in ("generic", "rift", None):
        assert streams_text(driver)
    # what streaming the screen text of a markdown answer would have given: not the final text, joined
    shown, final = "The capital of France is Paris.", "The capital of France is **Paris**."
    assert "".join(_stream([shown], final)) != final


@pytest.mark.asyncio
async def test_reasoning_is_a_thought_and_the_echoed_prompt_a_user_message() -> None:
    """A `reasoning` event is an `agent_thought_chunk` with its text (every daemon event checked against `litbridge
    schema`); an `accepted` this process did not send shows the daemon's `content`, else a placeholder."""
    from types import SimpleNamespace

    from lbd_helpers import check_event

    from litbridge.acp.agent import NOT_IN_EVENTS, SessionView

    sent: list[object] = []

    async def session_update(session_id: str, update: object) -> None:
        sent.append(update)

    agent = SimpleNamespace(
        conn=SimpleNamespace(session_update=session_update), prompt_of=lambda key, tid: None
    )
    view = SessionView(agent, "s1")  # type: ignore[arg-type]
    events = [
        {
            "event": "accepted",
            "session": "s1",
            "turn_id": "t1",
            "queued": False,
            "organic": True,
            "content": "why?",
        },
        {"event": "reasoning", "session": "s1", "turn_id": "t1", "text": "Think first."},
        {"event": "accepted", "session": "s1", "turn_id": "t2", "queued": False, "organic": True},
    ]
    for ev in events:
        check_event(ev)
        await view.apply(ev, live=True)
    got = [(u.session_update, u.content.text) for u in sent]  # type: ignore[attr-defined]
    assert got == [
        ("user_message_chunk", "why?"),
        ("agent_thought_chunk", "Think first."),
        ("user_message_chunk", NOT_IN_EVENTS[True]),
    ]
