"""The daemon: listeners (Unix socket, optional TCP with token), control connections and every command.

Commands are validated against `protocol/spec.py`, run against `Session`s, and answered with events from
`protocol/events.py`: per-session events are published through the `Hub` (seq, replay, broadcast);
direct replies (pong, sessions, dump, capabilities, errors) go to the asking client only. A client's
mistake is answered with `error{code,message,re}` and never takes the daemon down. CLI specifics live in
drivers; raw attach in `attach.py`. Front ends (attach, the web view, the fleet link) come in through the
public face `front.DaemonFront` (`serve_control`, `serve_attach`, `handle`, `peer_ok`); this module imports
none of them but attach, and `cli/serve.py` wires them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import logging
import os
import signal
import socket
import struct
import sys
from typing import Any

from litbridge import drivers
from litbridge.daemon import front, memory, paths, worktrees
from litbridge.daemon.attach import AttachServer
from litbridge.daemon.hub import Client, Hub
from litbridge.daemon.resume_store import ResumeStore
from litbridge.drivers.base import DriverError
from litbridge.keys import BadKey
from litbridge.protocol import auth
from litbridge.protocol import events as ev
from litbridge.protocol.framing import TooLarge, decode, encode, read_lines
from litbridge.protocol.names import control_character, shown
from litbridge.protocol.spec import (
    DEFAULT_CLI,
    MAX_LINE,
    MAX_NAME_BYTES,
    ProtocolError,
    session_key,
    validate_command,
)
from litbridge.pty import WriteQueueFull
from litbridge.session import Session, SessionCommandError

log = logging.getLogger("litbridge.daemon")

# Seconds a session whose CLI exited by itself stays listed as dead before it is removed.
REAP_AFTER = float(os.environ.get("LITBRIDGE_REAP_AFTER", "60"))
MAX_RESUME_TOKENS = 1000
STOP_WATCH_EVERY = 1.0  # seconds between checks for stopped (SIGSTOP) CLIs
STOP_WATCH_SLICE = 50  # sessions checked in one go (the rest later in the same second)
# Seconds between checks that our lock file is still in place (a tmp cleaner or `rm` may remove it).
LOCK_CHECK_EVERY = float(os.environ.get("LITBRIDGE_LOCK_CHECK", "5"))
# `create`s of one control connection in flight at once; the next create waits for one of them to finish.
CONCURRENT_CREATES = 32


class Daemon:
    """One `litbridge serve` process."""

    def __init__(
        self,
        socket_path: str | None = None,
        port: int | None = None,
        kill_grace: float = 2.0,
        reap_after: float | None = None,
        cli_nice: int = 0,
    ) -> None:
        self.socket_path = socket_path or paths.default_socket_path()
        self.cli_nice = cli_nice  # every CLI runs this many nice levels below the daemon (`serve --cli-nice`)
        self.port = port
        self.kill_grace = kill_grace
        self.reap_after = REAP_AFTER if reap_after is None else reap_after
        self.hub = Hub()
        self.sessions: dict[str, Session] = {}
        self.resume_tokens = ResumeStore.for_socket(self.socket_path)  # on disk: survives a restart
        self.token: str | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._stop = asyncio.Event()
        self._conn_tasks: set[asyncio.Task[Any]] = set()
        self._bg_tasks: set[asyncio.Task[Any]] = set()
        self.attach = AttachServer(self)
        self._unix = sys.platform != "win32"
        self._lock: paths.SocketLock | None = None
        self._owned: dict[str, tuple[int, int] | None] = {}  # path -> (dev, ino) of the files we created
        self._stop_watch: asyncio.Task[None] | None = None
        self._lock_watch: asyncio.Task[None] | None = None
        self._state_before_stop: dict[str, str] = {}
        self.web: front.WebLogin | None = None  # the web view of `serve --web`, set by cli/serve.py
        self.worktrees = worktrees.Worktrees()

    # ------------------------------------------------------------------ listen / run / stop
    async def start(self) -> None:
        """Bind every listener, the control socket last (once it accepts, everything is up).
        Raises paths.AlreadyRunning when a live daemon owns the socket."""
        backlog = listen_backlog()
        if self._unix:
            paths.prepare_socket_dir(self.socket_path)
            self._lock = paths.SocketLock(self.socket_path)
            self._lock.acquire()  # raises AlreadyRunning; held until shutdown() has unlinked our files
            try:
                paths.claim_socket_path(self.socket_path)  # raises AlreadyRunning when a daemon listens there
            except BaseException:
                self._lock.release()  # the live daemon locks the file we created at its next check
                self._lock = None
                raise
        if self.port is not None:
            self.issue_token()
            self._servers.append(
                await asyncio.start_server(
                    lambda r, w: self.serve_attach(r, w, tcp=True),
                    "127.0.0.1",
                    self.port + 1,
                    backlog=backlog,
                )
            )
            self._servers.append(
                await asyncio.start_server(
                    lambda r, w: self.serve_control(r, w, tcp=True),
                    "127.0.0.1",
                    self.port,
                    limit=MAX_LINE,
                    backlog=backlog,
                )
            )
            log.info(
                "listening on 127.0.0.1:%d (attach :%d), token in %s",
                self.port,
                self.port + 1,
                paths.token_path(self.socket_path),
            )
        if self._unix:
            old = os.umask(0o177)
            try:
                attach = paths.attach_path(self.socket_path)
                try:
                    self._servers.append(
                        await asyncio.start_unix_server(self.serve_attach, path=attach, backlog=backlog)
                    )
                    self._owned[attach] = paths.file_id(attach)
                    os.chmod(attach, 0o600)
                except OSError as exc:
                    log.warning("attach socket %s disabled: %s", attach, exc)
                self._servers.append(
                    await asyncio.start_unix_server(
                        self.serve_control, path=self.socket_path, limit=MAX_LINE, backlog=backlog
                    )
                )
                self._owned[self.socket_path] = paths.file_id(self.socket_path)
                os.chmod(self.socket_path, 0o600)
            finally:
                os.umask(old)
            self._lock_watch = asyncio.get_running_loop().create_task(self._watch_lock())
            log.info("listening on %s (attach %s.attach)", self.socket_path, self.socket_path)

    def issue_token(self) -> str:
        """Write a fresh token beside the socket (0600) for TCP and web clients; the file is ours to unlink."""
        token_file = paths.token_path(self.socket_path)
        self.token = paths.write_token(token_file)
        self._owned[token_file] = paths.file_id(token_file)
        return self.token

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT -> orderly shutdown (installed before binding, so no signal is lost)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)

    async def serve_forever(self) -> None:
        self.install_signal_handlers()
        try:
            await self._stop.wait()
        finally:
            await self.shutdown()

    def request_stop(self) -> None:
        self._stop.set()

    async def shutdown(self) -> None:
        """Close listeners, kill and reap every session, close clients, unlink our files."""
        log.info("shutting down: %d session(s)", len(self.sessions))
        for server in self._servers:
            server.close()
        for watch in (self._stop_watch, self._lock_watch):
            if watch is not None:
                watch.cancel()
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(s.kill() for s in sessions), return_exceptions=True)
        await asyncio.gather(*(self._release_worktree(s) for s in sessions), return_exceptions=True)
        for client in list(self.hub.clients):
            await client.aclose()
        self.attach.close_all()
        for task in list(self._conn_tasks):
            task.cancel()
        await asyncio.gather(*self._conn_tasks, return_exceptions=True)
        await asyncio.gather(
            *self._bg_tasks, return_exceptions=True
        )  # e.g. reaping a child of a cancelled create
        for path, ident in self._owned.items():  # only files we created and that are still ours
            paths.unlink_if_ours(path, ident)
        self._owned.clear()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    async def _watch_lock(self) -> None:
        """Every LOCK_CHECK_EVERY seconds: a lock file someone removed or replaced is locked again (a stat
        and an inode compare when nothing happened), so a later `serve` still sees this daemon by its lock."""
        said: str | None = None
        while self._lock is not None:
            await asyncio.sleep(LOCK_CHECK_EVERY)
            if self._lock is None:
                return
            try:
                what = self._lock.check()
            except OSError as exc:
                what = f"checking the lock file failed: {exc}"
            if what is not None and what != said:  # a lasting problem is logged once
                log.warning("%s", what)
            said = what

    # ------------------------------------------------------------------ connections (the public face)
    @staticmethod
    def peer_ok(writer: asyncio.StreamWriter) -> bool:
        """Whether a Unix socket's peer runs as our uid (`front.peer_ok`)."""
        return front.peer_ok(writer)

    async def serve_attach(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None:
        """Run one attach connection (selector, paint, raw bytes) until either side ends."""
        await self.attach.handle(reader, writer, tcp)

    async def serve_control(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False
    ) -> None:
        """Run one control connection (JSON lines) until either side ends: the Unix peer's uid checked, or
        over TCP the token handshake first; then every command through `handle`. Each listener and the web
        view's event socket run this."""
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        peer = "tcp" if tcp else "unix"
        client = Client(self.hub, writer, peer)
        creates: set[asyncio.Task[None]] = set()
        cancelled = False
        try:
            if not tcp and not self.peer_ok(writer):
                writer.write(encode(ev.error("peer uid differs from the daemon's", "unauthorized")))
                return
            lines = read_lines(reader)
            hello: dict[str, Any] | None = None
            if tcp:
                hello = await self._tcp_auth(lines, writer)
                if hello is None:
                    await _close_after_refusal(reader, writer)
                    return
            client.start()
            self.hub.attach(
                client,
                lambda n: ev.monitor_ready(
                    self._live_count(), n, drivers.clis(), self.hub.seq, self.hub.daemon_id
                ),
            )
            client.hold(lambda: _unread(reader, writer))  # until its first command: replay stays in seq order
            if hello is not None:
                await self.handle(client, hello)
                client.release()
            async for item in lines:
                if client.closed:
                    break
                if isinstance(item, TooLarge):
                    client.send_event(ev.error(f"line too long: {item.size} bytes > {MAX_LINE}", "too_large"))
                else:
                    try:
                        msg = decode(item)
                    except ProtocolError as exc:
                        client.send_event(ev.error(exc.message, exc.code))
                    else:
                        await self._run_command(client, msg, creates)
                client.release()  # its first command is handled: its held events may go now
                await client.wait_room()  # error replies obey the same backpressure as everything else
                await asyncio.sleep(0)  # one command at a time: other connections and sessions run in between
        except (ConnectionError, OSError) as exc:
            log.debug("control connection ended: %s", exc)
        except asyncio.CancelledError:
            cancelled = True
        finally:
            if creates:  # a create in flight is finished (or, at shutdown, cancelled) as it was when awaited
                if cancelled:
                    for t in creates:
                        t.cancel()
                await asyncio.gather(*creates, return_exceptions=True)
            if client.closed:
                self.hub.detach(client)
            else:
                await client.aclose()
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._conn_tasks.discard(task)

    async def _tcp_auth(self, lines: Any, writer: asyncio.StreamWriter) -> dict[str, Any] | None:
        """Authenticate a TCP connection before anything else; returns the hello to run, or None (closed).

        The first line is either the legacy `hello{token}` (lit-bridge clients) or `hello{auth:{nonce}}`, the
        proof-first handshake of `protocol/auth.py`: the daemon answers `auth_challenge` (its nonce and its
        proof of the token) and the client's next line must be a hello carrying the client's proof."""
        msg = await self._first_line(lines)
        why = "TCP clients must first send hello{token} or hello{auth:{nonce}}"
        if msg is not None and self.token is not None:
            auth_req, token = msg.get("auth"), msg.get("token")
            if isinstance(auth_req, dict):
                answer = await self._challenge(lines, writer, msg, self.token)
                if answer is not None:
                    return answer
                why = "wrong nonce or proof in hello.auth (see docs/protocol.md, TCP authentication)"
            elif isinstance(token, str) and hmac.compare_digest(token.encode(), self.token.encode()):
                return msg  # the legacy contract: the token itself on the first line
        writer.write(encode(ev.error(why, "unauthorized")))
        with contextlib.suppress(Exception):
            await writer.drain()
        return None

    async def _challenge(
        self, lines: Any, writer: asyncio.StreamWriter, hello: dict[str, Any], token: str
    ) -> dict[str, Any] | None:
        """Answer hello{auth:{nonce}} with `auth_challenge` (our nonce and proof); return the client's next
        hello when it carries the right proof, else None."""
        client_nonce = hello["auth"].get("nonce")
        if not auth.valid_nonce(client_nonce):
            return None
        daemon_nonce = auth.new_nonce()
        where = auth.endpoint(writer.get_extra_info("sockname"))
        proof = auth.server_proof(token, client_nonce, daemon_nonce, where)
        writer.write(encode(ev.auth_challenge(daemon_nonce, proof, hello.get("id"))))
        answer = await self._first_line(lines)
        given = answer.get("auth") if answer is not None else None
        expected = auth.client_proof(token, client_nonce, daemon_nonce, where)
        if isinstance(given, dict) and auth.same(expected, given.get("proof")):
            return answer
        return None

    @staticmethod
    async def _first_line(lines: Any) -> dict[str, Any] | None:
        """The next line as a hello command, or None (no line within 30 s, not JSON, not a hello)."""
        try:
            item = await asyncio.wait_for(lines.__anext__(), 30.0)
            msg = decode(item) if isinstance(item, bytes) else None
        except (StopAsyncIteration, asyncio.TimeoutError, ProtocolError):
            return None
        return msg if isinstance(msg, dict) and msg.get("cmd") == "hello" else None

    def _live_count(self) -> int:
        return sum(1 for s in self.sessions.values() if not s.dead)

    # ------------------------------------------------------------------ commands
    async def _run_command(self, client: Client, msg: Any, creates: set[asyncio.Task[None]]) -> None:
        """One command of a control connection. `create`s run side by side (up to CONCURRENT_CREATES): the
        next line is read while a create waits for its git worktree, its CLI's `--version` or its spawn. Any
        other command first waits for the connection's creates in flight, so it sees what they did exactly as
        when every create was awaited in turn (a `send` right after its `create` finds the session)."""
        if isinstance(msg, dict) and msg.get("cmd") == "create":
            while len(creates) >= CONCURRENT_CREATES:
                await asyncio.wait(set(creates), return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.get_running_loop().create_task(self.handle(client, msg))
            creates.add(task)
            task.add_done_callback(creates.discard)
            await asyncio.sleep(0)  # its synchronous start (the key registered) runs before the next line
            return
        if creates:
            await asyncio.wait(set(creates))
        await self.handle(client, msg)

    async def handle(self, client: Client, msg: Any) -> None:
        """Run one command; every failure becomes an `error` reply to this client."""
        re = msg.get("id") if isinstance(msg, dict) else None
        if isinstance(re, bool) or not isinstance(re, (str, int)):
            re = None
        key: str | None = None
        channel: str | None = None
        try:
            cmd, fields = validate_command(msg)
            if cmd.per_session:
                _check_names(cmd.name, fields)
                key = session_key(fields)
                channel = fields.get("channel_id")
                if re is not None and not client.wants(key):
                    client.expect_reply(key, re)  # every command gets its reply, whatever the subscription
            await getattr(self, f"cmd_{cmd.name}")(client, fields, re)
        except (ProtocolError, SessionCommandError, DriverError) as exc:
            client.send_event(ev.error(exc.message, exc.code, re, key, channel))
        except WriteQueueFull as exc:
            client.send_event(ev.error(str(exc), "write_queue_full", re, key, channel))
        except BadKey as exc:
            client.send_event(
                ev.error(f"unknown key name: {exc.name!r} (nothing was typed)", "bad_key", re, key, channel)
            )
        except Exception as exc:
            log.exception("command failed: %r", msg.get("cmd") if isinstance(msg, dict) else msg)
            client.send_event(ev.error(f"internal error: {exc}", "internal", re, key, channel))

    def _session(self, fields: dict[str, Any]) -> Session:
        key = session_key(fields)
        s = self.sessions.get(key)
        if s is None:
            raise SessionCommandError("session_not_found", "session not found")
        return s

    async def cmd_create(self, client: Client, f: dict[str, Any], re: Any) -> None:
        if not f.get("session"):
            raise ProtocolError("bad_field", "session name required")
        for fname in ("exe", "cli"):  # "" used to mean the default CLI silently
            if fname in f and not f[fname].strip():
                raise ProtocolError(
                    "bad_field",
                    f"create: '{fname}' is empty; name a CLI or leave the field out (default {DEFAULT_CLI})",
                )
        key = session_key(f)
        cli = f.get("exe") or f.get("cli") or DEFAULT_CLI
        existing = self.sessions.get(key)
        if existing is not None and not existing.dead:
            self.hub.publish(
                ev.ready_reused(
                    key,
                    f.get("channel_id"),
                    model=existing.model,
                    re=re,
                    state=existing.state,
                    **existing.session_fields(),
                )
            )
            return
        if existing is not None:
            del self.sessions[key]  # its CLI died: re-create, never "reuse"
            await self._release_worktree(existing)
        options = _create_options(f, cli)
        worktree = None
        if f.get("worktree") not in (None, False):  # raises WorktreeError; nothing made then
            worktree = await self.worktrees.create(
                options["working_dir"], key, f["worktree"], f.get("worktree_allow_dirty", False)
            )
            options["working_dir"] = worktree.path
        if self.sessions.get(key) is not None:  # another create of the key came in while git ran: reuse it
            if worktree is not None:
                await self.worktrees.discard(worktree)
            return await self.cmd_create(client, f, re)
        options["resume"] = self.resume_tokens.pop(key, None)
        session = Session(
            key,
            options,
            self.hub.publish,
            on_dead=self._on_dead,
            kill_grace=self.kill_grace,
            cli_nice=self.cli_nice,
        )
        session.worktree = worktree
        # Registered before the (off-loop) fork: a concurrent create of the key reuses it, kill/shutdown wait
        # for the child and reap it.
        self.sessions[key] = session
        try:
            await (
                session.spawn_async()
            )  # raises SessionCommandError(cli_not_found | spawn_failed | bad_field)
        except BaseException as exc:
            if self.sessions.get(key) is session:
                del self.sessions[key]
            if not isinstance(exc, SessionCommandError):  # cancelled mid-fork: the child may still appear
                self._background(self._undo_create(session))
            elif worktree is not None:  # nothing was spawned: only the worktree to undo
                await self._undo_create(session, kill=False)
            raise
        if session.killing or session.dead:  # killed, or the CLI exited before its startup could begin
            why = session.startup_exit_message()  # before the undo, whose kill would make it read "killed"
            if session.dead and not session.killing:
                await self._undo_create(session)
            raise SessionCommandError("spawn_failed", why)
        session.start(re)
        if sys.platform.startswith("linux"):
            self._ensure_stop_watch()

    async def _undo_create(self, session: Session, kill: bool = True) -> None:
        """A create that failed: its CLI (if one may run) killed and reaped, then its worktree and branch
        removed again."""
        if kill:
            await session.kill()
        wt, session.worktree = session.worktree, None
        if wt is not None:
            await self.worktrees.discard(wt)

    async def _release_worktree(self, session: Session) -> dict[str, Any] | None:
        """The session is gone: its worktree removed when clean, else kept (once per session).
        -> the outcome for `killed` / `reaped_idle`, None without a worktree."""
        wt, session.worktree = session.worktree, None
        if wt is None:
            return None
        outcome = await self.worktrees.release(wt)
        if not outcome["removed"]:
            log.info("worktree %s of %r kept: %s", wt.path, session.key, outcome.get("reason"))
        return outcome

    def _background(self, coro: Any) -> None:
        """Run cleanup that must finish even when the command that started it was cancelled."""
        task = asyncio.get_running_loop().create_task(coro)
        self._bg_tasks.add(task)
        task.add_done_callback(self._bg_tasks.discard)

    def _on_dead(self, session: Session) -> None:
        log.info("session %r is dead (exit %s)", session.key, session.exit_code)
        if session.killing or self._stop.is_set():
            return  # kill/shutdown remove it themselves
        loop = asyncio.get_running_loop()
        loop.call_later(self.reap_after, lambda: self._background(self._reap(session)))

    async def _reap(self, session: Session) -> None:
        """Remove a session whose CLI exited by itself, once its grace period is over: `reaped_idle{reason:
        "exited", exit_code}` tells clients; the resume token (when the driver has one) is kept for the key, so
        a later create resumes; the exit code and stderr tail were already in `exited`."""
        key = session.key
        if self.sessions.get(key) is not session or self._stop.is_set():
            return  # re-created, killed or shutting down meanwhile
        del self.sessions[key]
        token: str | None = None
        try:
            token = await asyncio.wait_for(session.driver.stop(True), 10.0)
        except Exception as exc:
            log.debug("resume token of reaped session %r: %s", key, exc)
        if token and key not in self.resume_tokens:
            self._keep_resume_token(key, token)
        wt = await self._release_worktree(session)
        self.hub.publish(ev.reaped_idle(key, session.channel_id, "exited", session.exit_code, wt))
        log.info("session %r reaped %.0fs after its CLI exited", key, self.reap_after)
        memory.trim_soon()  # its screen, buffers and driver are freed: give the heap back

    def _keep_resume_token(self, key: str, token: str) -> str | None:
        """Bounded: the oldest tokens go first (a token is a few dozen bytes; keys are client-chosen).
        -> None when the store is on disk, else why it could not be written."""
        self.resume_tokens.pop(key, None)
        self.resume_tokens[key] = token
        while len(self.resume_tokens) > MAX_RESUME_TOKENS:
            del self.resume_tokens[next(iter(self.resume_tokens))]
        return self.resume_tokens.write_error

    def _running(self, fields: dict[str, Any]) -> Session:
        """The session, refusing commands that need the CLI to read while it is stopped (SIGSTOP): they would
        otherwise wait, or end as an empty turn, with no explanation."""
        s = self._session(fields)
        child = s.child
        if child is not None and not s.dead and child.stopped:
            self._mark_stopped(s)
            raise SessionCommandError(
                "cli_stopped",
                f"the CLI (pid {child.pid}) is stopped (SIGSTOP/SIGTSTP); continue it (kill -CONT) or kill "
                "the session; nothing was sent",
            )
        return s

    def _mark_stopped(self, s: Session) -> None:
        if s.state != "stopped":
            self._state_before_stop[s.key] = s.state
            s.set_state("stopped")
        self._ensure_stop_watch()

    def _ensure_stop_watch(self) -> None:
        if self._stop_watch is None or self._stop_watch.done():
            self._stop_watch = asyncio.get_running_loop().create_task(self._watch_stopped())

    async def _watch_stopped(self) -> None:
        """Each session once a second: a stopped CLI is the state `stopped`; when it continues, its earlier
        state returns. Runs while live sessions exist. The /proc reads are spread over the second, at most
        STOP_WATCH_SLICE at a time: a read costs ~14 µs in the daemon at N=300, so a thousand in one go held
        the loop ~14 ms. Polled, not signalled: the CLIs are the daemon's children, but SIGCHLD is the event
        loop's own (its subprocesses), and /proc also tells a tracer's stop."""
        while not self._stop.is_set() and self._live_count():
            sessions = list(self.sessions.values())
            slices = max(1, -(-len(sessions) // STOP_WATCH_SLICE))
            for i in range(slices):
                for s in sessions[i * STOP_WATCH_SLICE : (i + 1) * STOP_WATCH_SLICE]:
                    self._check_stopped(s)
                await asyncio.sleep(STOP_WATCH_EVERY / slices)

    def _check_stopped(self, s: Session) -> None:
        if self.sessions.get(s.key) is not s:
            return  # closed since the round's snapshot (its key may already name a new session)
        child = s.child
        if child is None or s.dead:
            self._state_before_stop.pop(s.key, None)
        elif child.stopped:
            self._mark_stopped(s)
        elif s.state == "stopped":
            s.set_state(self._state_before_stop.pop(s.key, "idle"))

    async def cmd_send(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._running(f).send(f.get("content", ""), f.get("id"), re)

    async def cmd_input(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._running(f).input(f.get("content", ""), re)

    async def cmd_keystroke(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._running(f).keystroke(f["keys"], re)

    async def cmd_answer(self, client: Client, f: dict[str, Any], re: Any) -> None:
        await self._running(f).answer(
            f.get("question_id"), f.get("digit"), f.get("option"), f.get("text"), re
        )

    async def cmd_interrupt(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._session(f).interrupt(re)

    async def cmd_list(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(ev.sessions([s.list_item() for s in self.sessions.values()], re))

    async def cmd_dump(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(self._session(f).dump(re))

    async def cmd_kill(self, client: Client, f: dict[str, Any], re: Any) -> None:
        s = self._session(f)
        key = s.key
        store = bool(f.get("store_resume"))
        code, token = await s.kill(store)
        if self.sessions.get(key) is s:
            del self.sessions[key]
        resume: dict[str, Any] = {}
        if token:
            problem = self._keep_resume_token(key, token)
            resume = {"resume_stored": problem is None}
            if problem is not None:
                resume["resume_error"] = f"{problem}; the token is kept in memory until the daemon stops"
        elif store:
            resume = {
                "resume_stored": False,
                "resume_error": "the CLI gave no resume token (no conversation yet, or it cannot resume)",
            }
        wt = await self._release_worktree(s)  # after the process group is gone
        if wt is not None:
            resume["worktree"] = wt
        self.hub.publish(ev.killed(key, s.channel_id, code, re, **resume))
        memory.trim_soon()

    async def cmd_ping(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(ev.pong(re))

    async def cmd_web_login(self, client: Client, f: dict[str, Any], re: Any) -> None:
        if self.web is None:
            raise ProtocolError(
                "no_web_view", "this daemon has no web view (start it with `litbridge serve --web PORT`)"
            )
        client.send_event(ev.web_login(self.web.login_url(), self.web.login_ttl, re))

    async def cmd_hello(self, client: Client, f: dict[str, Any], re: Any) -> None:
        sub = f.get("subscribe")
        if sub is not None:
            if sub == "*":
                client.subscribed = None
            elif isinstance(sub, list):
                client.subscribed = set(sub)
            else:
                raise ProtocolError("bad_field", 'hello: subscribe must be a list of keys or "*"')
        deltas = f.get("deltas")
        if deltas is not None:  # before the replay: replayed and held events leave as `append` too
            client.set_deltas(bool(deltas))
        replayed = 0
        since = f.get("since_seq")
        if since is not None:
            gap = self.hub.gap(since, client)
            replayed = self.hub.replay(client, since)
            if gap is not None:  # ahead of the replayed events: the client knows what it missed
                client.send_before_queued([(encode(ev.replay_gap(gap[0], gap[1], re)), "replay_gap", None)])
        subscribed: list[str] | str = "*" if client.subscribed is None else sorted(client.subscribed)
        client.send_event(
            ev.capabilities(
                drivers.clis(),
                subscribed,
                replayed,
                self.hub.oldest_seq,
                re,
                self.hub.seq,
                self.hub.daemon_id,
                None if deltas is None else client.deltas,
            )
        )


def listen_backlog() -> int:
    """The largest accept queue the system allows (Linux: net.core.somaxconn), for every listener: asyncio's
    default of 100 makes a burst of simultaneous connects fail (a full Unix-socket queue refuses with EAGAIN)."""
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return max(int(f.read().strip()), socket.SOMAXCONN)
    except (OSError, ValueError):
        return socket.SOMAXCONN


def _unread(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Bytes from the client wait unread (in the stream's buffer or the kernel's): its first command is on
    its way even though a busy loop has not handled it yet."""
    if getattr(reader, "_buffer", None):
        return True
    sock = writer.get_extra_info("socket")
    try:
        import fcntl
        import termios

        return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0] > 0
    except Exception:
        return False


def listen_problem(socket_path: str, exc: OSError) -> str:
    """Why the daemon cannot listen, said about the socket's directory when that is the problem: the OS only
    names the first file we failed to create there (`/proc/lb.sock.lock: No such file or directory`)."""
    sock_dir = os.path.dirname(os.path.abspath(socket_path))
    reason = exc.strerror or str(exc)
    if not os.path.isdir(sock_dir):
        if os.path.lexists(sock_dir):
            return f"its directory {sock_dir} is not a directory"
        return f"its directory {sock_dir} does not exist and cannot be created ({reason})"
    failed = exc.filename if isinstance(exc.filename, str) else None
    if (
        failed is not None
        and os.path.dirname(os.path.abspath(failed)) == sock_dir
        and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS)
    ):
        return f"its directory {sock_dir} is not writable (creating {failed}: {reason})"
    return str(exc)


def _check_names(cmd: str, fields: dict[str, Any]) -> None:
    """Session names and channel ids are shown in terminals (CLI messages, attach, logs) and repeated in every
    event: refuse the control characters (C0, DEL, C1) a terminal would act on instead of printing, and names
    longer than MAX_NAME_BYTES."""
    for fname, what in (("session", "session name"), ("channel_id", "channel id")):
        value = fields.get(fname)
        if not isinstance(value, str):
            continue
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            raise ProtocolError(
                "bad_field",
                f"{cmd}: {what} '{shown(value[:32])}…' is {size} bytes long (UTF-8); "
                f"session names and channel ids are at most {MAX_NAME_BYTES} bytes",
            )
        bad = control_character(value)
        if bad is not None:
            raise ProtocolError(
                "bad_field",
                f"{cmd}: {what} '{shown(value)}' contains the control character U+{ord(bad):04X}; "
                "session names and channel ids cannot contain control characters (C0, DEL, C1)",
            )


def _create_options(f: dict[str, Any], cli: str) -> dict[str, Any]:
    """The driver's options: the create fields, `cli` resolved from cli/exe, working_dir defaulting to $HOME."""
    options = {k: v for k, v in f.items() if k not in ("cmd", "id", "exe")}
    options["cli"] = cli
    options["working_dir"] = os.path.expanduser(f.get("working_dir") or "~")
    return options


async def _close_after_refusal(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send FIN after the refusal, then read what the peer still sends (briefly) before closing: closing a
    socket with unread input sends RST at once, which can discard the refusal line before the peer reads it."""

    async def discard() -> None:
        while await reader.read(65536):
            pass

    with contextlib.suppress(Exception):
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(discard(), 2.0)


EXIT_ALREADY_RUNNING = 3  # `serve` when a live daemon owns the socket: retrying cannot help (service units)
