"""Notifications (`serve --notify`, `[notify]` in the config file): tell a person when a session needs them.

The notifier watches the events the hub publishes (a tap, called after `seq` is stamped) and turns five of them
into notices: a `question`, a `complete`, a `turn_error`, an `exited` with a non-zero (or no) exit code, and
`stuck` (a session left in `thinking`/`responding`/`dialog` longer than `stuck_after`, measured from its `state`
events, no polling). A notice passes the kind filter, the session-name exclusions and the per-session rate limit,
then goes to every target that wants its kind:

- `Webhook`: a JSON POST (optionally HMAC-signed) from a bounded queue drained by its own task, with retries and
  backoff; a full queue drops its oldest notice (logged and counted), so a dead or hanging receiver costs the
  daemon a few kilobytes and never a wait;
- `Desktop`: `notify-send` (Linux and other Unixes), `osascript` (macOS) or a PowerShell toast (Windows), run as
  an asynchronous subprocess from a bounded queue; a missing program turns the target off with one log line.

Nothing here may raise into the hub: `Notifier.observe` logs and swallows its own failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import hmac
import logging
import os
import shutil
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from litbridge import __version__
from litbridge.turns import TURN_STATES

log = logging.getLogger("litbridge.notify")

KINDS = ("question", "complete", "turn_error", "exited", "stuck")
"""Every notice kind; the default filter lets all of them through."""
STUCK_STATES = TURN_STATES  # a session left in one of them too long is stuck
"""The states a session is `stuck` in when it stays in one of them past `stuck_after`."""
SUMMARY_MAX = 300  # characters of a notice's summary (the full text is the client's, not a notification's)
DESKTOP_QUEUE = 20
DESKTOP_TIMEOUT = 10.0  # seconds a notify-send/osascript/powershell run may take before it is killed
RETRY_DELAY_MAX = 60.0
SIGNATURE_HEADER = "X-Litbridge-Signature"


class ConfigError(ValueError):
    """A bad `[notify]` table or `--notify` flag; the message names the key."""


# ------------------------------------------------------------------------------------------------ configuration
@dataclass
class WebhookConfig:
    url: str
    secret: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    events: frozenset[str] | None = None  # None: the global filter
    queue: int = 100
    retries: int = 5
    retry_delay: float = 1.0
    timeout: float = 10.0


@dataclass
class NotifyConfig:
    desktop: bool = False
    webhooks: list[WebhookConfig] = field(default_factory=list)
    events: frozenset[str] = frozenset(KINDS)
    desktop_events: frozenset[str] | None = None
    stuck_after: float = 600.0
    per_minute: int = 6
    exclude: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.desktop or bool(self.webhooks)


def default_config_path() -> str:
    """`$XDG_CONFIG_HOME/litbridge/config.toml` (`~/.config/...` when XDG_CONFIG_HOME is unset or relative)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "litbridge", "config.toml")


def read_config_file(path: str) -> dict[str, Any]:
    """The `[notify]` table of a TOML file ({} without one); ConfigError for unreadable or invalid TOML."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found]
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    table = data.get("notify", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `notify` must be a table ([notify])")
    return table


def _kinds(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of event kinds")
    unknown = sorted(set(value) - set(KINDS))
    if unknown:
        raise ConfigError(f"{where}: unknown kind(s) {', '.join(unknown)} (known: {', '.join(KINDS)})")
    return frozenset(value)


def _number(value: Any, where: str, integer: bool = False, minimum: float = 0.0) -> Any:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < minimum:
        raise ConfigError(f"{where} must be {'an integer' if integer else 'a number'} >= {minimum:g}")
    return value


def _check_keys(table: dict[str, Any], known: Iterable[str], where: str) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _webhook(table: Any, where: str) -> WebhookConfig:
    if isinstance(table, str):
        table = {"url": table}
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table with a `url`")
    _check_keys(table, WebhookConfig.__dataclass_fields__, where)
    url = table.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url must be an http:// or https:// URL")
    secret = table.get("secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise ConfigError(f"{where}.secret must be a non-empty string")
    headers = table.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigError(f"{where}.headers must be a table of strings")
    hook = WebhookConfig(url=url, secret=secret, headers=dict(headers))
    if "events" in table:
        hook.events = _kinds(table["events"], f"{where}.events")
    if "queue" in table:
        hook.queue = _number(table["queue"], f"{where}.queue", integer=True, minimum=1)
    if "retries" in table:
        hook.retries = _number(table["retries"], f"{where}.retries", integer=True)
    if "retry_delay" in table:
        hook.retry_delay = float(_number(table["retry_delay"], f"{where}.retry_delay"))
    if "timeout" in table:
        hook.timeout = float(_number(table["timeout"], f"{where}.timeout", minimum=0.1))
    return hook


def parse_config(table: dict[str, Any], where: str = "notify") -> NotifyConfig:
    """A `[notify]` table -> NotifyConfig; ConfigError names the first bad key."""
    known = ("desktop", "desktop_events", "webhook", "events", "stuck_after", "per_minute", "exclude")
    _check_keys(table, known, where)
    cfg = NotifyConfig()
    if "desktop" in table:
        if not isinstance(table["desktop"], bool):
            raise ConfigError(f"{where}.desktop must be true or false")
        cfg.desktop = table["desktop"]
    if "events" in table:
        cfg.events = _kinds(table["events"], f"{where}.events")
    if "desktop_events" in table:
        cfg.desktop_events = _kinds(table["desktop_events"], f"{where}.desktop_events")
    if "stuck_after" in table:
        cfg.stuck_after = float(_number(table["stuck_after"], f"{where}.stuck_after", minimum=0.1))
    if "per_minute" in table:
        cfg.per_minute = _number(table["per_minute"], f"{where}.per_minute", integer=True, minimum=1)
    if "exclude" in table:
        exclude = table["exclude"]
        if not isinstance(exclude, list) or not all(isinstance(g, str) for g in exclude):
            raise ConfigError(f"{where}.exclude must be a list of session-name globs")
        cfg.exclude = tuple(exclude)
    hooks = table.get("webhook", [])
    if isinstance(hooks, (dict, str)):
        hooks = [hooks]
    if not isinstance(hooks, list):
        raise ConfigError(f"{where}.webhook must be a table or an array of tables ([[notify.webhook]])")
    cfg.webhooks = [_webhook(h, f"{where}.webhook[{i}]") for i, h in enumerate(hooks)]
    return cfg


def build_config(
    config_path: str | None,
    targets: list[str],
    events: str | None = None,
    stuck_after: float | None = None,
    exclude: list[str] | None = None,
) -> NotifyConfig:
    """The `serve` flags over the config file: `--config` (else the default path, when it exists), then each
    `--notify desktop|URL` adds a target and the other flags replace the file's values. A webhook named on the
    command line takes its secret from $LITBRIDGE_NOTIFY_SECRET (never from argv, which `ps` shows)."""
    path = config_path or default_config_path()
    table: dict[str, Any] = {}
    if config_path is not None or os.path.isfile(path):
        table = read_config_file(path)
    cfg = parse_config(table, f"{path} [notify]")
    secret = os.environ.get("LITBRIDGE_NOTIFY_SECRET") or None
    for target in targets:
        if target == "desktop":
            cfg.desktop = True
        elif target.startswith(("http://", "https://")):
            cfg.webhooks.append(WebhookConfig(url=target, secret=secret))
        else:
            raise ConfigError(f"--notify wants `desktop` or an http(s):// webhook URL, got {target!r}")
    if events is not None:
        cfg.events = _kinds(events, "--notify-events")
    if stuck_after is not None:
        cfg.stuck_after = float(_number(stuck_after, "--notify-stuck-after", minimum=0.1))
    if exclude:
        cfg.exclude = (*cfg.exclude, *exclude)
    return cfg


# ------------------------------------------------------------------------------------------------ notices
@dataclass
class Notice:
    kind: str
    session: str
    channel_id: str | None
    summary: str
    seq: int | None
    detail: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    @property
    def title(self) -> str:
        what = {
            "question": "asks a question",
            "complete": "finished a turn",
            "turn_error": "turn failed",
            "exited": "CLI exited",
            "stuck": "looks stuck",
        }[self.kind]
        return f"litbridge: {self.session} {what}"


def _clip(text: Any) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"


def notice_of(event: dict[str, Any]) -> Notice | None:
    """The notice a published event makes, if any (`stuck` comes from the timers instead)."""
    name, key = event.get("event"), event.get("session")
    if not isinstance(key, str):
        return None
    channel, seq = event.get("channel_id"), event.get("seq")
    if name == "question":
        labels = [o.get("label") for o in event.get("options") or [] if isinstance(o, dict)]
        detail = {"question_id": event.get("question_id"), "options": labels}
        return Notice("question", key, channel, _clip(event.get("text") or "a question"), seq, detail)
    if name == "complete":
        detail = {"turn_id": event.get("turn_id")}
        if event.get("exit_code") is not None:
            detail["exit_code"] = event["exit_code"]
        return Notice("complete", key, channel, _clip(event.get("content")) or "(no text)", seq, detail)
    if name == "turn_error":
        detail = {"turn_id": event.get("turn_id"), "error_kind": event.get("kind")}
        return Notice("turn_error", key, channel, _clip(event.get("message")), seq, detail)
    if name == "exited" and event.get("exit_code") != 0:
        code = event.get("exit_code")
        tail = _clip(event.get("stderr_tail"))
        summary = f"exit code {code}" + (f": {tail}" if tail else "")
        return Notice("exited", key, channel, _clip(summary), seq, {"exit_code": code})
    return None


def payload(notice: Notice, daemon_id: str, url: str | None) -> bytes:
    """The webhook body (docs/notify.md has its schema)."""
    body: dict[str, Any] = {
        "source": "litbridge",
        "version": 1,
        "kind": notice.kind,
        "session": notice.session,
        "summary": notice.summary,
        "title": notice.title,
        "seq": notice.seq,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(notice.time)),
        "host": socket.gethostname(),
        "daemon_id": daemon_id,
        "detail": notice.detail,
    }
    if notice.channel_id is not None:
        body["channel_id"] = notice.channel_id
    if url is not None:
        body["url"] = url
    return orjson.dumps(body)


def signature(secret: str, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of the raw body>`, the X-Litbridge-Signature value (GitHub's convention)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class RateLimit:
    """Per session, at most `per_minute` notices in any 60 s, and a notice identical to the session's previous
    one (same kind, summary and question or turn) within 60 s is dropped: a chatty session cannot flood anyone.
    Questions have a budget of their own (`per_minute` questions besides the other kinds): a session blocked on
    a question must not go unreported because it just finished a few turns."""

    WINDOW = 60.0

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._sent: dict[tuple[str, bool], deque[float]] = {}
        self._last: dict[str, tuple[tuple[str, str, Any], float]] = {}
        self.suppressed = 0

    @staticmethod
    def identity(notice: Notice) -> tuple[str, str, Any]:
        """What makes two notices the same one: the same question asked again is news, a replay is not."""
        ref = notice.detail.get("question_id") if notice.kind == "question" else notice.detail.get("turn_id")
        return (notice.kind, notice.summary, ref)

    def allow(self, notice: Notice) -> str | None:
        """None when the notice may go, else why not (and it is counted as suppressed)."""
        now = self.clock()
        key = notice.session
        ident = self.identity(notice)
        last = self._last.get(key)
        if last is not None and last[0] == ident and now - last[1] < self.WINDOW:
            self.suppressed += 1
            return "identical to the previous one"
        sent = self._sent.setdefault((key, notice.kind == "question"), deque())
        while sent and now - sent[0] >= self.WINDOW:
            sent.popleft()
        if len(sent) >= self.per_minute:
            self.suppressed += 1
            what = " questions" if notice.kind == "question" else ""
            return f"more than {self.per_minute}{what} per minute"
        sent.append(now)
        self._last[key] = (ident, now)
        return None

    def forget(self, session: str) -> None:
        self._sent.pop((session, False), None)
        self._sent.pop((session, True), None)
        self._last.pop(session, None)


# ------------------------------------------------------------------------------------------------ targets
class Target:
    """A destination with its own bounded queue and worker task: `offer` never waits."""

    name = "target"

    def __init__(self, events: frozenset[str], limit: int) -> None:
        self.events = events
        self.limit = limit
        self.queue: deque[Notice] = deque()
        self.dropped = 0
        self.delivered = 0
        self.failed = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def offer(self, notice: Notice) -> None:
        if len(self.queue) >= self.limit:
            self.queue.popleft()
            self.dropped += 1
            log.warning(
                "%s: queue full (%d), dropped the oldest notification (%d dropped so far)",
                self.name,
                self.limit,
                self.dropped,
            )
        self.queue.append(notice)
        log.debug("%s: %d notification(s) queued (limit %d)", self.name, len(self.queue), self.limit)
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.queue:
                notice = self.queue.popleft()
                try:
                    await self.deliver(notice)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self.failed += 1
                    log.exception("%s: delivering a %s notification failed", self.name, notice.kind)

    async def deliver(self, notice: Notice) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


def shown_url(url: str) -> str:
    """A webhook URL as logs show it: scheme, host and port only (the path or query of many webhook services
    is itself the secret, and credentials may sit in the authority)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}/…"


class Webhook(Target):
    """JSON POSTs to one URL through aiohttp's client; retried with exponential backoff on connection errors,
    timeouts, 408, 429 and 5xx; any other answer that is not 2xx is final (the receiver refused it, or
    redirected: redirects are not followed, a POST body must not wander to another address)."""

    def __init__(
        self,
        cfg: WebhookConfig,
        events: frozenset[str],
        daemon_id: str,
        link: Callable[[], str | None],
        number: int = 1,
    ) -> None:
        super().__init__(events, cfg.queue)
        self.cfg = cfg
        self.name = f"webhook {number} ({shown_url(cfg.url)})"
        self.daemon_id = daemon_id
        self.link = link
        self._http: Any = None

    async def deliver(self, notice: Notice) -> None:
        import aiohttp

        if self._http is None:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.cfg.timeout),
                headers={"User-Agent": f"litbridge/{__version__}"},
            )
        body = payload(notice, self.daemon_id, self.link())
        headers = {"Content-Type": "application/json", "X-Litbridge-Event": notice.kind, **self.cfg.headers}
        if self.cfg.secret:
            headers[SIGNATURE_HEADER] = signature(self.cfg.secret, body)
        for attempt in range(self.cfg.retries + 1):
            try:
                async with self._http.post(
                    self.cfg.url, data=body, headers=headers, allow_redirects=False
                ) as resp:
                    status = resp.status
                    await resp.read()
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                why = why.replace(self.cfg.url, shown_url(self.cfg.url))
            else:
                if 200 <= status < 300:
                    self.delivered += 1
                    log.debug("%s: %s notification delivered (%d)", self.name, notice.kind, status)
                    return
                why = f"HTTP {status}"
                if status < 500 and status not in (408, 429):
                    break
            if attempt < self.cfg.retries:
                delay = min(self.cfg.retry_delay * 2**attempt, RETRY_DELAY_MAX)
                log.info(
                    "%s: %s; retry %d/%d in %.1f s", self.name, why, attempt + 1, self.cfg.retries, delay
                )
                await asyncio.sleep(delay)
        self.failed += 1
        log.warning(
            "%s: gave up on a %s notification of %r (%s)", self.name, notice.kind, notice.session, why
        )

    async def aclose(self) -> None:
        await super().aclose()
        if self._http is not None:
            await self._http.close()


WINDOWS_TOAST = (
    "[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime]"
    " > $null; "
    "$t = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent("
    "[Windows.UI.Notifications.ToastTemplateType]::ToastText02); "
    "$x = $t.GetElementsByTagName('text'); "
    "$x.Item(0).AppendChild($t.CreateTextNode($env:LITBRIDGE_TITLE)) > $null; "
    "$x.Item(1).AppendChild($t.CreateTextNode($env:LITBRIDGE_BODY)) > $null; "
    "[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier("
    "'{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\\WindowsPowerShell\\v1.0\\powershell.exe')"
    ".Show([Windows.UI.Notifications.ToastNotification]::new($t))"
)
"""A toast through the WinRT API that Windows PowerShell can load (no module to install); the text comes in
through the environment, so nothing is ever quoted into the script. Shown under PowerShell's own app id."""


def desktop_command(
    title: str, body: str, platform: str = sys.platform
) -> tuple[list[str], dict[str, str]] | None:
    """(argv, extra environment) of this platform's notifier, or None when its program is not installed. The
    title and body are passed as arguments (or environment), never spliced into a script."""
    if platform == "darwin":
        exe = shutil.which("osascript")
        script = [
            "-e",
            "on run argv",
            "-e",
            "display notification (item 2 of argv) with title (item 1 of argv)",
        ]
        return ([exe, *script, "-e", "end run", title, body], {}) if exe else None
    if platform == "win32":
        exe = shutil.which("powershell.exe") or shutil.which("powershell")
        argv = [exe or "", "-NoProfile", "-NonInteractive", "-Command", WINDOWS_TOAST]
        return (argv, {"LITBRIDGE_TITLE": title, "LITBRIDGE_BODY": body}) if exe else None
    exe = shutil.which("notify-send")  # libnotify over D-Bus: Linux and the BSDs
    return ([exe, "--app-name=litbridge", "--", title, body], {}) if exe else None


DESKTOP_PROGRAMS = {"darwin": "osascript", "win32": "powershell.exe"}


class Desktop(Target):
    """Desktop notifications, one subprocess at a time (a hung notifier is killed after DESKTOP_TIMEOUT)."""

    name = "desktop"

    async def deliver(self, notice: Notice) -> None:
        command = desktop_command(notice.title, notice.summary)
        if command is None:
            program = DESKTOP_PROGRAMS.get(sys.platform, "notify-send")
            log.warning("desktop notifications skipped: %s is not on PATH", program)
            self.failed += 1
            return
        argv, extra = command
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **extra} if extra else None,
        )
        try:
            _, err = await asyncio.wait_for(proc.communicate(), DESKTOP_TIMEOUT)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            self.failed += 1
            log.warning("desktop notification: %s did not finish in %g s; killed", argv[0], DESKTOP_TIMEOUT)
            return
        if proc.returncode != 0:
            self.failed += 1
            log.warning(
                "desktop notification: %s exited %s: %s",
                os.path.basename(argv[0]),
                proc.returncode,
                _clip(err.decode("utf-8", "replace")),
            )
            return
        self.delivered += 1


# ------------------------------------------------------------------------------------------------ the notifier
class Notifier:
    """Events in (`observe`, the hub's tap), notices out to the targets; owns the `stuck` timers."""

    def __init__(
        self,
        cfg: NotifyConfig,
        daemon_id: str,
        link: Callable[[], str | None] = lambda: None,
        quiet: Callable[[str], bool] = lambda key: False,
    ) -> None:
        """`link()`: the web view's address, if any; `quiet(key)`: the session is being killed (or is gone),
        so the `turn_error` its running turn ends with is the kill's doing, not news."""
        self.cfg = cfg
        self.quiet = quiet
        self.rate = RateLimit(cfg.per_minute)
        self.targets: list[Target] = [
            Webhook(h, h.events or cfg.events, daemon_id, link, i + 1) for i, h in enumerate(cfg.webhooks)
        ]
        if cfg.desktop:
            self.targets.append(Desktop(cfg.desktop_events or cfg.events, DESKTOP_QUEUE))
        self._stuck: dict[str, asyncio.TimerHandle] = {}

    def start(self) -> None:
        if self.cfg.desktop and desktop_command("", "") is None:
            program = DESKTOP_PROGRAMS.get(sys.platform, "notify-send")
            log.warning("desktop notifications are off: %s is not on PATH", program)
            self.targets = [t for t in self.targets if not isinstance(t, Desktop)]
        for target in self.targets:
            target.start()
        log.info(
            "notifications: %s; kinds %s",
            ", ".join(t.name for t in self.targets) or "no target",
            ", ".join(k for k in KINDS if k in self.cfg.events),
        )

    def observe(self, event: dict[str, Any]) -> None:
        """The hub's tap: must be cheap and never raise."""
        try:
            self._observe(event)
        except Exception:
            log.exception("notifier: event %r", event.get("event"))

    def _observe(self, event: dict[str, Any]) -> None:
        name, key = event.get("event"), event.get("session")
        if not isinstance(key, str):
            return
        if name == "state":
            self._track(key, event.get("channel_id"), event.get("to"), event.get("seq"))
        elif name in ("exited", "killed"):
            self._untrack(key)
        elif name == "reaped_idle":
            self._untrack(key)
            self.rate.forget(key)
        notice = notice_of(event)
        if notice is not None and not (notice.kind == "turn_error" and self.quiet(key)):
            self.emit(notice)

    def _track(self, key: str, channel: str | None, state: Any, seq: Any) -> None:
        self._untrack(key)
        if state in STUCK_STATES and self.wanted("stuck"):
            after = self.cfg.stuck_after
            summary = f"still {state} after {after:g} s"
            notice = Notice("stuck", key, channel, summary, seq, {"state": state, "seconds": after})
            self._stuck[key] = asyncio.get_running_loop().call_later(after, self._fire_stuck, notice)

    def _fire_stuck(self, notice: Notice) -> None:
        self._stuck.pop(notice.session, None)
        notice.time = time.time()
        self.emit(notice)

    def _untrack(self, key: str) -> None:
        handle = self._stuck.pop(key, None)
        if handle is not None:
            handle.cancel()

    def excluded(self, session: str) -> bool:
        return any(fnmatch.fnmatchcase(session, glob) for glob in self.cfg.exclude)

    def wanted(self, kind: str) -> bool:
        """Some target takes this kind (each target's `events`, by default the global list)."""
        return any(kind in target.events for target in self.targets)

    def emit(self, notice: Notice) -> None:
        if not self.wanted(notice.kind) or self.excluded(notice.session):
            return
        why = self.rate.allow(notice)
        if why is not None:
            log.info(
                "notification %s of %r suppressed: %s (%d suppressed so far)",
                notice.kind,
                notice.session,
                why,
                self.rate.suppressed,
            )
            return
        for target in self.targets:
            if notice.kind in target.events:
                target.offer(notice)

    async def aclose(self) -> None:
        for handle in self._stuck.values():
            handle.cancel()
        self._stuck.clear()
        await asyncio.gather(*(t.aclose() for t in self.targets), return_exceptions=True)
