"""The notifier's pure parts: config parsing and precedence, notices, the webhook payload and signature, the rate
limit (on a fake clock), the desktop commands of each platform, and the notifier on a fake target."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from pathlib import Path
from typing import Any

import orjson
import pytest

from litbridge.daemon import notify


def test_config_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        """
[notify]
desktop = true
events = ["question", "stuck"]
stuck_after = 30
per_minute = 2
exclude = ["ci-*"]

[[notify.webhook]]
url = "https://hooks.example/a"
secret = "k"
events = ["complete"]
headers = { Authorization = "Bearer t" }
"""
    )
    monkeypatch.setenv("LITBRIDGE_NOTIFY_SECRET", "from-env")
    c = notify.build_config(
        str(cfg), ["http://127.0.0.1:9/b"], events="question,exited", stuck_after=5, exclude=["tmp-*"]
    )
    assert c.desktop and c.per_minute == 2 and c.stuck_after == 5
    assert c.events == {"question", "exited"}  # the flag replaces the file's list
    assert c.exclude == ("ci-*", "tmp-*")
    a, b = c.webhooks
    assert (a.url, a.secret, a.events, a.headers) == (
        "https://hooks.example/a",
        "k",
        {"complete"},
        {"Authorization": "Bearer t"},
    )
    assert (b.url, b.secret, b.events) == ("http://127.0.0.1:9/b", "from-env", None)


def test_default_config_path_is_read_only_when_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert notify.default_config_path() == str(tmp_path / "litbridge" / "config.toml")
    assert not notify.build_config(None, []).enabled  # no file: nothing on, no error
    (tmp_path / "litbridge").mkdir()
    (tmp_path / "litbridge" / "config.toml").write_text("[notify]\ndesktop = true\n")
    assert notify.build_config(None, []).desktop
    with pytest.raises(notify.ConfigError, match="cannot read"):
        notify.build_config(str(tmp_path / "missing.toml"), [])


def test_the_suite_never_reads_the_developers_config() -> None:
    """tests/conftest.py points XDG_CONFIG_HOME at an empty directory of its own: a `[notify]` in the developer's
    ~/.config/litbridge/config.toml never reaches a daemon the tests start."""
    path = Path(notify.default_config_path())
    assert path.parents[1] != Path.home() / ".config", path
    assert not path.exists() and not notify.build_config(None, []).enabled, path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[notify]\nper_minut = 3\n", "unknown key"),
        ('[notify]\nevents = ["complete", "done"]\n', "unknown kind"),
        ("[notify]\nper_minute = 0\n", "per_minute must be an integer >= 1"),
        ('[notify]\ndesktop = "yes"\n', "desktop must be true or false"),
        ('[[notify.webhook]]\nurl = "ftp://x"\n', "must be an http"),
        ('[[notify.webhook]]\nurl = "http://x"\nsecrte = "k"\n', "unknown key"),
        ("[notify\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    with pytest.raises(notify.ConfigError, match=message):
        notify.build_config(str(cfg), [])


def test_bad_flags() -> None:
    with pytest.raises(notify.ConfigError, match="desktop` or an http"):
        notify.build_config("/dev/null", ["slack"])
    with pytest.raises(notify.ConfigError, match="unknown kind"):
        notify.build_config("/dev/null", ["desktop"], events="complete,bogus")


def test_notices_of_events() -> None:
    q = notify.notice_of(
        {
            "event": "question",
            "session": "s",
            "seq": 4,
            "question_id": "q1",
            "text": "Allow?",
            "options": [{"digit": "1", "label": "yes"}, {"digit": "2", "label": "no"}],
        }
    )
    assert q is not None and (q.kind, q.summary, q.detail["options"]) == ("question", "Allow?", ["yes", "no"])
    c = notify.notice_of({"event": "complete", "session": "s", "content": "x" * 1000, "seq": 5})
    assert c is not None and len(c.summary) == notify.SUMMARY_MAX and c.summary.endswith("…")
    assert notify.notice_of({"event": "exited", "session": "s", "exit_code": 0, "stderr_tail": ""}) is None
    e = notify.notice_of({"event": "exited", "session": "s", "exit_code": None, "stderr_tail": "boom"})
    assert e is not None and e.summary == "exit code None: boom"
    assert notify.notice_of({"event": "killed", "session": "s", "exit_code": -15}) is None
    assert notify.notice_of({"event": "replace", "session": "s", "text": "x"}) is None


def test_payload_and_signature() -> None:
    n = notify.Notice("complete", "build", "ch", "done", 7, {"turn_id": "t1"}, time=0)
    body = notify.payload(n, "abc", "http://127.0.0.1:8080/")
    doc = orjson.loads(body)
    assert doc == {
        "source": "litbridge",
        "version": 1,
        "kind": "complete",
        "session": "build",
        "channel_id": "ch",
        "summary": "done",
        "title": "litbridge: build finished a turn",
        "seq": 7,
        "time": "1970-01-01T00:00:00Z",
        "host": doc["host"],
        "daemon_id": "abc",
        "detail": {"turn_id": "t1"},
        "url": "http://127.0.0.1:8080/",
    }
    assert "url" not in orjson.loads(notify.payload(n, "abc", None))
    expected = "sha256=" + hmac.new(b"key", body, hashlib.sha256).hexdigest()
    assert notify.signature("key", body) == expected


def test_rate_limit_window_and_collapse() -> None:
    now = [0.0]
    rate = notify.RateLimit(2, clock=lambda: now[0])

    def n(summary: str, session: str = "s") -> notify.Notice:
        return notify.Notice("complete", session, None, summary, None, {"turn_id": "t1"})

    assert rate.allow(n("a")) is None
    assert rate.allow(n("a")) == "identical to the previous one"
    assert rate.allow(n("b")) is None
    assert rate.allow(n("c")) == "more than 2 per minute"
    assert rate.allow(n("c", "other")) is None  # per session
    now[0] = 59.0
    assert rate.allow(n("d")) == "more than 2 per minute"
    now[0] = 60.5  # the first two left the window
    assert rate.allow(n("d")) is None
    assert rate.allow(n("a")) is None  # identical only to the *previous* one
    assert rate.suppressed == 3


def test_the_same_question_asked_again_is_news() -> None:
    """A question's identity is its question_id, a turn's its turn_id: the same permission asked twice (two
    questions), or the same answer in two turns, is two notices; only a repeat of one event is collapsed."""
    now = [0.0]
    rate = notify.RateLimit(5, clock=lambda: now[0])

    def q(qid: str) -> notify.Notice:
        return notify.Notice("question", "s", None, "Allow Bash(ls)?", None, {"question_id": qid})

    def c(tid: str) -> notify.Notice:
        return notify.Notice("complete", "s", None, "Done.", None, {"turn_id": tid})

    assert rate.allow(q("q1")) is None
    assert rate.allow(q("q2")) is None
    assert rate.allow(q("q2")) == "identical to the previous one"
    assert rate.allow(c("t1")) is None
    assert rate.allow(c("t2")) is None
    err = notify.Notice("turn_error", "s", None, "boom", None, {"turn_id": "t3"})
    assert rate.allow(err) is None
    assert rate.allow(notify.Notice("turn_error", "s", None, "boom", None, {"turn_id": "t4"})) is None
    assert rate.suppressed == 1


def test_a_question_after_per_minute_completes_still_goes() -> None:
    """Questions have a budget of their own: a session that finished `per_minute` turns and then blocks on a
    question is still reported; questions beyond their own budget are held back like any other kind."""
    now = [0.0]
    rate = notify.RateLimit(2, clock=lambda: now[0])
    for tid in ("t1", "t2"):
        assert rate.allow(notify.Notice("complete", "s", None, tid, None, {"turn_id": tid})) is None
    assert rate.allow(notify.Notice("complete", "s", None, "t3", None, {"turn_id": "t3"})) == (
        "more than 2 per minute"
    )
    for qid in ("q1", "q2"):
        assert rate.allow(notify.Notice("question", "s", None, "Allow?", None, {"question_id": qid})) is None
    assert rate.allow(notify.Notice("question", "s", None, "Allow?", None, {"question_id": "q3"})) == (
        "more than 2 questions per minute"
    )
    assert rate.allow(notify.Notice("stuck", "s", None, "still thinking", None)) == "more than 2 per minute"
    rate.forget("s")
    assert rate.allow(notify.Notice("question", "s", None, "Allow?", None, {"question_id": "q4"})) is None


def test_desktop_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify.shutil, "which", lambda name: f"/bin/{name}")
    argv, env = notify.desktop_command("T", "B", "linux") or ([], {})
    assert argv == ["/bin/notify-send", "--app-name=litbridge", "--", "T", "B"] and env == {}
    argv, env = notify.desktop_command('T"', "B'", "darwin") or ([], {})
    # the title and body are arguments, never spliced into the script
    assert argv[0] == "/bin/osascript" and argv[-2:] == ['T"', "B'"]
    argv, env = notify.desktop_command("T", "B", "win32") or ([], {})
    assert argv[0] == "/bin/powershell.exe" and "ToastNotificationManager" in argv[-1]
    assert env == {"LITBRIDGE_TITLE": "T", "LITBRIDGE_BODY": "B"}
    monkeypatch.setattr(notify.shutil, "which", lambda name: None)
    assert notify.desktop_command("T", "B", "linux") is None


class _Recorder(notify.Target):
    name = "recorder"

    def __init__(self, events: frozenset[str]) -> None:
        super().__init__(events, 100)
        self.got: list[notify.Notice] = []

    async def deliver(self, notice: notify.Notice) -> None:
        self.got.append(notice)


@pytest.mark.asyncio
async def test_stuck_fires_once_per_stay_and_is_cancelled_by_a_state_change() -> None:
    cfg = notify.NotifyConfig(stuck_after=0.2, per_minute=100)
    n = notify.Notifier(cfg, "id")
    rec = _Recorder(frozenset(notify.KINDS))
    n.targets = [rec]
    n.start()

    def state(to: str, seq: int) -> dict[str, Any]:
        return {"event": "state", "session": "s", "from": "idle", "to": to, "seq": seq}

    n.observe(state("thinking", 1))
    n.observe(state("idle", 2))  # left in time: no stuck
    n.observe(state("responding", 3))
    for _ in range(600):  # up to 30 s on a busy machine
        if rec.got:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # a second stuck for the same stay would have come by now
    assert [(x.kind, x.seq, x.detail["state"]) for x in rec.got] == [("stuck", 3, "responding")]
    n.observe({"event": "bogus"})  # never raises into the hub
    n.observe(state("dialog", 4))
    n.observe({"event": "killed", "session": "s", "exit_code": 0, "seq": 5})  # a gone session is not stuck
    await asyncio.sleep(0.5)
    assert len(rec.got) == 1
    await n.aclose()


def test_a_targets_own_kinds_replace_the_global_list() -> None:
    cfg = notify.parse_config(
        {
            "events": ["complete"],
            "webhook": [
                {"url": "http://127.0.0.1:9/a", "events": ["question"]},
                {"url": "http://127.0.0.1:9/b"},
            ],
        }
    )
    n = notify.Notifier(cfg, "id")
    a, b = n.targets
    n.emit(notify.Notice("question", "s", None, "Allow?", 1))
    n.emit(notify.Notice("complete", "s", None, "done", 2))
    n.emit(notify.Notice("exited", "s", None, "exit code 1", 3))
    assert [x.kind for x in a.queue] == ["question"] and [x.kind for x in b.queue] == ["complete"]
    assert not n.wanted("stuck")


def test_logs_show_a_webhook_without_its_path() -> None:
    assert (
        notify.shown_url("https://user:pw@hooks.example:8443/T0/B1/secret?x=1")
        == "https://hooks.example:8443/…"
    )
    assert notify.shown_url("http://[::1]/hook") == "http://[::1]/…"
