"""QwenDriver's launch (no binary needed): session pinning, `approval_mode`, resume, the per-session QWEN_HOME,
and that it is the Gemini driver's subclass with Qwen's plug-ins (its launch a `kit.Launch` of its own, typed
against Qwen's launch state)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from litbridge.drivers import clis, get_driver, kit
from litbridge.drivers.base import DriverError
from litbridge.drivers.gemini import v0_61
from litbridge.drivers.gemini.driver import GeminiDriver
from litbridge.drivers.qwen.chats import chats_dir, project_id
from litbridge.drivers.qwen.driver import QwenDriver
from litbridge.drivers.qwen.launch import Launch
from litbridge.pty import child_env


def driver(tmp_path: Path, **options) -> QwenDriver:
    host = SimpleNamespace(log=logging.getLogger("test"), loop=None)
    cwd = tmp_path / "work" / "my.proj"
    cwd.mkdir(parents=True, exist_ok=True)
    opts = {"cli": "qwen", "working_dir": str(cwd), "env": {"HOME": str(tmp_path)}, **options}
    return QwenDriver(host, opts)


def test_registered_and_a_gemini_subclass() -> None:
    assert get_driver("qwen") is QwenDriver and get_driver("/usr/local/bin/qwen") is QwenDriver
    assert "qwen" in clis()
    assert issubclass(QwenDriver, GeminiDriver) and issubclass(Launch, kit.Launch)
    plugins = QwenDriver.CLI.pick("0.24.4")
    assert issubclass(plugins.rules, v0_61.Rules) and plugins.launch is Launch


def test_launch_pins_a_session_id_and_passes_the_approval_mode(tmp_path: Path) -> None:
    d = driver(tmp_path, model="mock-model", approval_mode="default")
    spec = d.launch()
    assert spec.argv[:2] == ["qwen", "--session-id"] and spec.argv[2] == d.session_id
    assert spec.argv[3:] == ["--model", "mock-model", "--approval-mode", "default"]
    assert not d.resumed
    assert "--approval-mode" not in driver(tmp_path).launch().argv  # unset: the user's settings decide
    yolo = driver(tmp_path, approval_mode="default", args=["--yolo"]).launch().argv
    assert "--approval-mode" not in yolo  # the caller's own flag wins


def test_a_bad_approval_mode_is_the_clients_bad_field(tmp_path: Path) -> None:
    with pytest.raises(DriverError) as err:
        driver(tmp_path, approval_mode="sometimes").launch()
    assert err.value.code == "bad_field"


def test_session_home_settings_merged_user_files_untouched(tmp_path: Path) -> None:
    user = tmp_path / ".qwen"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"model": {"name": "m"}, "ui": {"theme": "x"}}))
    (user / "memories").mkdir()
    before = (user / "settings.json").read_bytes()
    spec = driver(tmp_path).launch()
    home = Path(spec.env["QWEN_HOME"])
    settings = json.loads((home / "settings.json").read_text())
    assert settings["model"] == {"name": "m"} and settings["ui"]["theme"] == "x"
    assert settings["ui"]["enableFollowupSuggestions"] is False  # no ghost text in the input box
    assert (home / "projects").is_symlink() and (home / "projects").resolve() == (user / "projects").resolve()
    assert (home / "memories").is_symlink()
    assert (user / "settings.json").read_bytes() == before
    child = child_env(spec.env, {"CI": "true"}, remove=spec.env_remove)
    assert child["QWEN_HOME"] == str(home)


def test_resume_token_with_a_chat_file_resumes_it(tmp_path: Path) -> None:
    d = driver(tmp_path)
    sid = "0b0e1f6a-1111-4222-8333-444455556666"
    folder = chats_dir(tmp_path / ".qwen", d.cwd)
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("{}\n")
    assert folder.parent.name == project_id(d.cwd) and "." not in folder.parent.name
    d2 = driver(tmp_path, resume=sid)
    argv = d2.launch().argv
    assert argv[1:3] == ["--resume", sid] and d2.resumed and d2.session_id == sid
    assert d2.resume_record() == (sid, folder / f"{sid}.jsonl")
    d3 = driver(tmp_path, resume="no-such-session")  # no file: a fresh session
    argv = d3.launch().argv
    assert argv[1] == "--session-id" and not d3.resumed
