"""A CLI version's record mapping is picked like its rules: each driver's follower maps the CLI's record with the
tracker of the `Record` plug-in its `CliSpec` picks for the version (`driver.record.tracker()`), also when the
version becomes known after the follower was made, and never swaps a tracker that already read entries."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from litbridge.drivers.claude import versions as claude_versions
from litbridge.drivers.claude.driver import ClaudeDriver
from litbridge.drivers.claude.transcript import TurnTracker, project_dir
from litbridge.drivers.codex import rollout as ro
from litbridge.drivers.codex import versions as codex_versions
from litbridge.drivers.codex.driver import CodexDriver
from litbridge.drivers.gemini import versions as gemini_versions
from litbridge.drivers.gemini.chat import ChatTurns
from litbridge.drivers.gemini.driver import GeminiDriver
from litbridge.drivers.records import JsonlFile, RecordFollower


def _host() -> Any:
    return SimpleNamespace(log=logging.getLogger("test"), loop=SimpleNamespace(time=time.monotonic))


class ClaudeTracker(TurnTracker):
    """A later version's mapping (same logic here): records what it was fed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def feed(self, entries: Any) -> Any:
        self.seen.extend(entries)
        return super().feed(entries)


class Claude22(claude_versions.Record):
    VERSION = "2.2"

    def tracker(self) -> Any:
        return ClaudeTracker()


def test_claude_follows_its_transcript_with_the_versions_record_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(claude_versions.CLI.record, "2.2", Claude22)
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")}
    cwd = tmp_path / "proj"
    cwd.mkdir()

    older = ClaudeDriver(_host(), {"working_dir": str(cwd), "env": env, "cli_version": "2.1.328"})
    older.launch()
    assert older.follower is not None and type(older.follower.tracker) is TurnTracker

    d = ClaudeDriver(_host(), {"working_dir": str(cwd), "env": env, "cli_version": "2.2.1"})
    d.launch()
    assert isinstance(d.record, Claude22)
    follower = d.follower
    assert follower is not None and isinstance(follower.tracker, ClaudeTracker)
    # the transcript the launch pinned is read through that tracker
    line = {"type": "user", "sessionId": d.session_id, "message": {"role": "user", "content": "hi"}}
    path = project_dir(str(cwd), env) / f"{d.session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    follower.read()
    assert [e.get("type") for e in follower.tracker.seen] == ["user"]
    follower.close()
    older.follower.close()


class CodexNewer(codex_versions.Record):
    VERSION = "0.170"

    def tracker(self) -> Any:
        return CodexTracker()


class CodexTracker(ro.TurnTracker):
    pass


def test_codex_takes_the_record_plugin_of_the_version_its_binary_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The follower exists before `prepare` asks `codex --version`: it starts with the newest mapping and takes
    the binary's own version's once that is known (nothing was read yet)."""
    monkeypatch.setitem(codex_versions.CLI.record, "0.170", CodexNewer)
    fake = tmp_path / "bin" / "codex"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho codex-cli 0.169.0\n")
    fake.chmod(0o755)
    d = CodexDriver(_host(), {"cli": str(fake), "working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}})
    assert type(d.follower.tracker) is CodexTracker  # the version is not known yet: the newest
    asyncio.run(d.prepare())
    assert d.cli_version == "0.169.0"
    assert type(d.record) is codex_versions.Record and type(d.follower.tracker) is ro.TurnTracker
    d.use_version("0.170.3")
    assert type(d.follower.tracker) is CodexTracker


class GeminiNewer(gemini_versions.Record):
    VERSION = "0.62"

    def tracker(self) -> Any:
        return GeminiTurns()


class GeminiTurns(ChatTurns):
    pass


def test_gemini_takes_the_record_plugin_of_the_version_its_header_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini's version comes from its first frame (`read_screen` calls `use_version`), after the follower was
    made; the follower maps the chat file with that version's tracker, which the driver reads turn ends from."""
    monkeypatch.setitem(gemini_versions.CLI.record, "0.62", GeminiNewer)
    d = GeminiDriver(_host(), {"working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}})
    assert type(d.follower.tracker) is GeminiTurns
    d.use_version("0.61.0")
    assert type(d.follower.tracker) is ChatTurns


def test_a_tracker_that_read_entries_is_kept(tmp_path: Path) -> None:
    """A version learnt late never moves a half-read record to another mapping: its turn state would be lost."""

    class Tracker:
        def __init__(self) -> None:
            self.fed: list[Any] = []

        def feed(self, entries: Any) -> list[Any]:
            self.fed.extend(entries)
            return []

    path = tmp_path / "record.jsonl"
    first, second = Tracker(), Tracker()
    fw: RecordFollower[Tracker] = RecordFollower(_host(), JsonlFile(path), first, lambda _e: None)
    assert fw.use_tracker(second) and fw.tracker is second  # nothing read: the new mapping is taken
    path.write_text('{"n": 1}\n', encoding="utf-8")
    fw.read()
    assert second.fed == [{"n": 1}]
    assert not fw.use_tracker(first) and fw.tracker is second
