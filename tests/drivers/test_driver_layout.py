"""CLI knowledge stays in drivers/<cli>/: the shared pieces (directory watch, paste payload) are CLI-neutral
modules, and `litbridge replay` gets every CLI's transcript layout from that driver's `replay_setup`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lbd_helpers import check_event

from litbridge import drivers
from litbridge.drivers.claude.driver import ClaudeDriver
from litbridge.drivers.generic import GenericDriver
from litbridge.replay import Capture, replay

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
SID = "0b6f3f52-6a43-4a8e-9d0b-3a3c1f1e2d4a"

_NO_CLAUDE = """
import json, sys
from litbridge.replay import replay
out = {}
for path in sys.argv[1:]:
    out[path] = replay(path, fast=True, tail=3.0)
loaded = sorted(m for m in sys.modules if m.startswith("litbridge.drivers.claude"))
print(json.dumps({"events": out, "claude_modules": loaded}))
"""


@pytest.mark.parametrize(
    "capture", ["codex/codex_exit_quit", "gemini/gemini_exit_quit"], ids=lambda c: c.split("/")[0]
)
def test_codex_and_gemini_replay_without_the_claude_package(capture: str) -> None:
    """Replaying a Codex or Gemini session never imports the Claude driver package (a broken Claude package
    cannot break the other CLIs, as the registry promises)."""
    path = CAPTURES / capture
    assert path.is_dir(), f"{path} is missing from the repository's recordings"
    proc = subprocess.run(
        [sys.executable, "-c", _NO_CLAUDE, str(path)], capture_output=True, text=True, timeout=60, check=True
    )
    result = json.loads(proc.stdout)
    events = result["events"][str(path)]
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    assert "complete" in [e["event"] for e in events] and events[-1]["event"] == "exited"
    assert result["claude_modules"] == []


def _claude_capture(args: list[str]) -> Capture:
    line = json.dumps({"type": "user", "sessionId": SID}).encode() + b"\n"
    return Capture(
        "c",
        [(0.1, b"\x1b[2J"), (0.2, b"\x1b[1m Claude Code v2.1.5\x1b[0m")],
        transcript=[(1.0, f"{SID}.jsonl", line)],
        transcript_dirs={f"{SID}.jsonl": "-home-dev-work-proj"},
        meta={"argv": ["claude", *args], "cwd": "/home/dev/work/elsewhere"},
    )


def test_claude_replay_setup_pins_the_recorded_session(tmp_path: Path) -> None:
    """Claude's own hook: private config dir, the recorded session id pinned, the logo's version, and the
    recorded project folder (not the slug of the recorded cwd)."""
    options, tdir = ClaudeDriver.replay_setup(_claude_capture(["--model", "x"]), tmp_path)
    assert options["args"] == ["--model", "x", "--session-id", SID]
    assert options["env"] == {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")}
    assert options["cli_version"] == "2.1.5"
    assert tdir == tmp_path / ".claude" / "projects" / "-home-dev-work-proj"

    resumed, _ = ClaudeDriver.replay_setup(_claude_capture(["--resume", SID]), tmp_path)
    assert resumed["args"] == ["--resume", SID]  # a resumed recording is replayed as a resume, unpinned


def test_a_driver_without_replay_setup_gets_no_other_clis_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program with no hook replays with a private HOME only: no Claude config dir, no pinned session."""
    seen: list[dict[str, Any]] = []

    class Recording(GenericDriver):
        def __init__(self, host: Any, options: dict[str, Any]) -> None:
            seen.append(options)
            super().__init__(host, options)

    monkeypatch.setitem(drivers._REGISTRY, "acme-shell", Recording)
    cap = Capture(
        "plain",
        [(0.1, b"$ "), (0.3, b"hello\r\n$ ")],
        meta={"argv": ["acme-shell", "-i"], "cwd": "/tmp", "exit_code": 0},
    )
    events = replay(cap, fast=True, tail=1.0)
    for ev in events:
        check_event({k: v for k, v in ev.items() if k != "t"})
    assert events[-1]["event"] == "exited"
    assert seen and seen[0]["args"] == ["-i"]
    assert set(seen[0]["env"]) == {"HOME"} and "cli_version" not in seen[0]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_replay_takes_the_version_from_the_recorded_output(cli: str, tmp_path: Path) -> None:
    """Every in-repo recording that shows its CLI version (in the logo or header, escape sequences between the
    words) gives it to replay, so replay picks the rules without asking an installed `<cli> --version`."""
    import fetch_fixtures

    folder = {"claude": fetch_fixtures.CAPTURES, "codex": fetch_fixtures.CODEX_CAPTURES}.get(
        cli, fetch_fixtures.GEMINI_CAPTURES
    )
    want = {"claude": "2.1.328", "codex": "0.169.0", "gemini": "0.61.0"}[cli]
    seen = {}
    for d in sorted(p for p in folder.iterdir() if (p / "chunks.jsonl").is_file()):
        capture = Capture.load(d)
        options, _ = drivers.get_driver(cli).replay_setup(capture, tmp_path / d.name)
        seen[d.name] = options["cli_version"]
        if options["cli_version"] is None:  # only a recording that never showed it (Codex's login screen)
            assert want.encode() not in b"".join(data for _, data in capture.chunks), d.name
    assert {v for v in seen.values() if v} == {want}, seen


def test_codex_rules_follow_the_binarys_version_before_the_first_frame(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A newer rules class does not read an older binary's first frames: `prepare` (awaited before `launch`) asks
    `<binary> --version` (once per binary file) and picks the rules before the CLI draws anything."""
    import asyncio
    import logging
    from types import SimpleNamespace

    from litbridge.drivers.codex import driver as codex
    from litbridge.drivers.codex import v0_169, versions

    class Newer(v0_169.Rules):
        pass

    monkeypatch.setitem(versions.RULES, "0.170", Newer)
    host = SimpleNamespace(log=logging.getLogger("test"), loop=None)
    for version, rules in (("0.169.0", v0_169.Rules), ("0.170.2", Newer)):
        fake = tmp_path / version / "codex"
        fake.parent.mkdir()
        fake.write_text(f"#!/bin/sh\necho codex-cli {version}\n")
        fake.chmod(0o755)
        d = codex.CodexDriver(
            host, {"cli": str(fake), "working_dir": str(tmp_path), "env": {"HOME": str(tmp_path)}}
        )
        assert type(d.rules) is Newer  # not known yet: the newest
        asyncio.run(d.prepare())
        d.launch()
        assert (d.cli_version, type(d.rules)) == (version, rules)
