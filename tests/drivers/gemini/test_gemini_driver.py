"""GeminiDriver's launch: session pinning, resume, the per-session settings home, option checks."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from litbridge.drivers import clis, get_driver
from litbridge.drivers.base import DriverError
from litbridge.drivers.gemini.driver import GeminiDriver, paste_payload
from litbridge.pty import child_env


def driver(tmp_path: Path, **options) -> GeminiDriver:
    host = SimpleNamespace(log=logging.getLogger("test"), loop=None)
    cwd = tmp_path / "work" / "my_proj"
    cwd.mkdir(parents=True, exist_ok=True)
    opts = {"cli": "gemini", "working_dir": str(cwd), "env": {"HOME": str(tmp_path)}, **options}
    return GeminiDriver(host, opts)


def test_registered() -> None:
    assert get_driver("gemini") is GeminiDriver
    assert get_driver("/usr/local/bin/gemini") is GeminiDriver
    assert "gemini" in clis()


def test_launch_pins_a_new_session_id(tmp_path: Path) -> None:
    d = driver(tmp_path, model="gemini-3.8-flash")
    spec = d.launch()
    assert spec.argv[:2] == ["gemini", "--session-id"] and spec.argv[2] == d.session_id
    assert spec.argv[3:] == ["--model", "gemini-3.8-flash"]
    assert spec.transport == "pty" and spec.cwd == d.cwd and not d.resumed


def test_a_ci_environment_is_kept_from_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with CI=true or GITHUB_ACTIONS=true Gemini CLI runs headless on a terminal and exits 42 at once
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    spec = driver(tmp_path).launch()
    child = child_env(spec.env, {}, remove=spec.env_remove)
    assert "CI" not in child and "GITHUB_ACTIONS" not in child
    assert child["GEMINI_CLI_HOME"] == spec.env["GEMINI_CLI_HOME"]
    assert (
        child_env(spec.env, {"CI": "true"}, remove=spec.env_remove)["CI"] == "true"
    )  # the caller still wins


def test_session_home_settings_merged_user_files_untouched(tmp_path: Path) -> None:
    user = tmp_path / ".gemini"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"general": {"maxAttempts": 2}, "ui": {"theme": "x"}}))
    (user / "trustedFolders.json").write_text(json.dumps({"/elsewhere": "TRUST_FOLDER"}))
    (user / "oauth_creds.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in user.iterdir() if p.is_file()}
    d = driver(tmp_path, env={"HOME": str(tmp_path), "GEMINI_API_KEY": "k"}, preapprove=True)
    spec = d.launch()
    session = Path(spec.env["GEMINI_CLI_HOME"]) / ".gemini"
    settings = json.loads((session / "settings.json").read_text())
    assert settings["general"] == {
        "maxAttempts": 2,
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
    }
    assert settings["ui"]["theme"] == "x" and settings["ui"]["showCompatibilityWarnings"] is False
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"  # a key and no sign-in method
    trusted = json.loads((session / "trustedFolders.json").read_text())
    assert trusted == {"/elsewhere": "TRUST_FOLDER", d.cwd: "TRUST_FOLDER"}  # preapprove: this session only
    assert os.readlink(session / "oauth_creds.json") == str(user / "oauth_creds.json")
    assert (
        os.readlink(session / "tmp") == str(user / "tmp") and (user / "tmp").is_dir()
    )  # chats in the user's home
    assert {p.name: p.read_bytes() for p in user.iterdir() if p.is_file()} == before
    d.on_exit(0)  # the session home goes with the process
    assert not session.exists()


def test_user_chosen_sign_in_is_kept(tmp_path: Path) -> None:
    user = tmp_path / ".gemini"
    user.mkdir()
    (user / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}})
    )
    d = driver(tmp_path, env={"HOME": str(tmp_path), "GEMINI_API_KEY": "k"})
    session = Path(d.launch().env["GEMINI_CLI_HOME"]) / ".gemini"
    assert (
        json.loads((session / "settings.json").read_text())["security"]["auth"]["selectedType"]
        == "oauth-personal"
    )
    d.on_exit(0)


def test_resume_token_with_a_chat_file(tmp_path: Path) -> None:
    sid = "7d292d9f-1afd-44a1-8524-caf72e927ac4"
    chats = tmp_path / ".gemini" / "tmp" / "my-proj" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-12-01T01-47-7d292d9f.jsonl").write_text("{}\n")
    d = driver(tmp_path, resume=sid)
    assert d.launch().argv == ["gemini", "--resume", sid] and d.resumed and d.session_id == sid
    d.on_exit(0)
    fresh = driver(tmp_path, resume="00000000-0000-4000-8000-000000000000")
    argv = fresh.launch().argv
    assert argv[1] == "--session-id" and not fresh.resumed  # no chat file: start fresh, never fail the create
    fresh.on_exit(0)


def test_explicit_args_win(tmp_path: Path) -> None:
    d = driver(tmp_path, args=["--session-id", "abc12345-0000"])
    assert d.launch().argv == ["gemini", "--session-id", "abc12345-0000"] and d.session_id == "abc12345-0000"
    d.on_exit(0)
    r = driver(tmp_path, args=["--resume", "latest"])
    assert r.launch().argv == ["gemini", "--resume", "latest"] and r.resumed
    r.on_exit(0)


@pytest.mark.parametrize("bad", ["soon", -1, 0, [5], "inf"])
def test_bad_turn_timeout_is_a_bad_field_at_launch(tmp_path: Path, bad) -> None:
    d = driver(tmp_path, turn_timeout=bad)  # never raises while the session is being built
    with pytest.raises(DriverError) as err:
        d.launch()
    assert err.value.code == "bad_field" and "turn_timeout" in err.value.message
    assert d.session_home is None  # nothing was created for a create that fails


def test_turn_timeout_is_the_engine_deadline(tmp_path: Path) -> None:
    d = driver(tmp_path, turn_timeout="12")
    d.launch()
    assert d.engine.timing.turn_deadline == 12.0
    d.on_exit(0)
    d = driver(tmp_path)
    d.launch()
    assert d.engine.timing.turn_deadline == 600.0
    d.on_exit(0)


def test_paste_payload() -> None:
    assert paste_payload("a?b\r\nc\rd\x1b[201~e\tf") == b"a?b\nc\nd[201~e\tf"


def test_resume_pins_the_conversation_file_not_the_new_minute_one(tmp_path: Path) -> None:
    """`gemini --resume` appends to the existing file and also starts an empty one named by the current minute
    (seen live across a minute change): the driver follows the file that held the conversation."""
    sid = "ec000000-0000-4000-8000-000000000001"
    chats = tmp_path / ".gemini" / "tmp" / "my-proj" / "chats"
    chats.mkdir(parents=True)
    old = chats / "session-2026-12-01T04-04-ec000000.jsonl"
    old.write_text(json.dumps({"sessionId": sid, "kind": "main"}) + "\n")
    d = driver(tmp_path, resume=sid)
    d.launch()
    (chats / "session-2026-12-01T04-06-ec000000.jsonl").write_text(json.dumps({"sessionId": sid}) + "\n")
    assert d._pin() and d.chat_path == old
    d.on_exit(0)
