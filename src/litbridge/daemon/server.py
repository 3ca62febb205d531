"""The daemon: listeners (Unix socket, optional TCP with token), control connections and every command.

Commands are validated against `protocol/spec.py`, run against `Session`s, and answered with events from
`protocol/events.py`: per-session events are published through the `Hub` (seq, replay, broadcast);
direct replies (pong, sessions, dump, capabilities, errors) go to the asking client only. A client's
mistake is answered with `error{code,message,re}` and never takes the daemon down. CLI specifics live in
drivers; raw attach in `attach.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import sys
from typing import Any

from litbridge import drivers
from litbridge.daemon import paths
from litbridge.daemon.attach import AttachServer
from litbridge.daemon.hub import Client, Hub
from litbridge.drivers.base import DriverError
from litbridge.keys import BadKey
from litbridge.protocol import events as ev
from litbridge.protocol.framing import TooLarge, decode, encode, read_lines
from litbridge.protocol.spec import DEFAULT_CLI, MAX_LINE, ProtocolError, session_key, validate_command
from litbridge.session import Session, SessionCommandError

log = logging.getLogger("litbridge.daemon")


class Daemon:
    """One `litbridge serve` process."""

    def __init__(self, socket_path: str | None = None, port: int | None = None, kill_grace: float = 2.0) -> None:
        self.socket_path = socket_path or paths.default_socket_path()
        self.port = port
        self.kill_grace = kill_grace
        self.hub = Hub()
        self.sessions: dict[str, Session] = {}
        self.resume_tokens: dict[str, str] = {}
        self.token: str | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._stop = asyncio.Event()
        self._conn_tasks: set[asyncio.Task[Any]] = set()
        self._bg_tasks: set[asyncio.Task[Any]] = set()
        self.attach = AttachServer(self)
        self._unix = sys.platform != "win32"

    # ------------------------------------------------------------------ listen / run / stop
    async def start(self) -> None:
        """Bind every listener, the control socket last (once it accepts, everything is up).
        Raises paths.AlreadyRunning when a live daemon owns the socket."""
        if self._unix:
            paths.prepare_socket_dir(self.socket_path)
            paths.claim_socket_path(self.socket_path)
        if self.port is not None:
            self.token = paths.write_token(paths.token_path(self.socket_path))
            self._servers.append(
                await asyncio.start_server(lambda r, w: self.attach.handle(r, w, tcp=True), "127.0.0.1", self.port + 1)
            )
            self._servers.append(
                await asyncio.start_server(
                    lambda r, w: self._on_control(r, w, tcp=True), "127.0.0.1", self.port, limit=MAX_LINE
                )
            )
            log.info("listening on 127.0.0.1:%d (attach :%d), token in %s", self.port, self.port + 1,
                     paths.token_path(self.socket_path))
        if self._unix:
            old = os.umask(0o177)
            try:
                attach = paths.attach_path(self.socket_path)
                try:
                    self._servers.append(await asyncio.start_unix_server(self.attach.handle, path=attach))
                    os.chmod(attach, 0o600)
                except OSError as exc:
                    log.warning("attach socket %s disabled: %s", attach, exc)
                self._servers.append(
                    await asyncio.start_unix_server(self._on_control, path=self.socket_path, limit=MAX_LINE)
                )
                os.chmod(self.socket_path, 0o600)
            finally:
                os.umask(old)
            log.info("listening on %s (attach %s.attach)", self.socket_path, self.socket_path)

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
        sessions = list(self.sessions.values())
        self.sessions.clear()
        await asyncio.gather(*(s.kill() for s in sessions), return_exceptions=True)
        for client in list(self.hub.clients):
            await client.aclose()
        self.attach.close_all()
        for task in list(self._conn_tasks):
            task.cancel()
        await asyncio.gather(*self._conn_tasks, return_exceptions=True)
        await asyncio.gather(*self._bg_tasks, return_exceptions=True)  # e.g. reaping a child of a cancelled create
        if self._unix:
            paths.unlink_quietly(self.socket_path, paths.attach_path(self.socket_path))
        if self.token is not None:
            paths.unlink_quietly(paths.token_path(self.socket_path))

    # ------------------------------------------------------------------ control connections
    def _peer_ok(self, writer: asyncio.StreamWriter) -> bool:
        sock = writer.get_extra_info("socket")
        if sock is None or not hasattr(os, "getuid"):
            return True
        uid = paths.peer_uid(sock)
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from uid %d", uid)
            return False
        return True

    async def _on_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tcp: bool = False) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        peer = "tcp" if tcp else "unix"
        client = Client(self.hub, writer, peer)
        try:
            if not tcp and not self._peer_ok(writer):
                writer.write(encode(ev.error("peer uid differs from the daemon's", "unauthorized")))
                return
            lines = read_lines(reader)
            hello: dict[str, Any] | None = None
            if tcp:
                hello = await self._tcp_auth(lines, writer)
                if hello is None:
                    return
            client.start()
            self.hub.attach(
                client,
                lambda n: ev.monitor_ready(self._live_count(), n, drivers.clis(), self.hub.seq, self.hub.daemon_id),
            )
            if hello is not None:
                await self.handle(client, hello)
            async for item in lines:
                if client.closed:
                    break
                if isinstance(item, TooLarge):
                    client.send_event(ev.error(f"line too long: {item.size} bytes > {MAX_LINE}", "too_large"))
                    continue
                try:
                    msg = decode(item)
                except ProtocolError as exc:
                    client.send_event(ev.error(exc.message, exc.code))
                    continue
                await self.handle(client, msg)
                await client.wait_room()
                await asyncio.sleep(0)  # one command at a time: other connections and sessions run in between
        except (ConnectionError, OSError) as exc:
            log.debug("control connection ended: %s", exc)
        except asyncio.CancelledError:
            pass
        finally:
            if client.closed:
                self.hub.detach(client)
            else:
                await client.aclose()
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._conn_tasks.discard(task)

    async def _tcp_auth(self, lines: Any, writer: asyncio.StreamWriter) -> dict[str, Any] | None:
        """The first TCP line must be hello{token} with the right token; anything else closes."""
        try:
            item = await asyncio.wait_for(lines.__anext__(), 30.0)
            msg = decode(item) if isinstance(item, bytes) else None
        except (StopAsyncIteration, asyncio.TimeoutError, ProtocolError):
            msg = None
        token = msg.get("token") if isinstance(msg, dict) and msg.get("cmd") == "hello" else None
        if not isinstance(token, str) or self.token is None or not hmac.compare_digest(token, self.token):
            writer.write(encode(ev.error("TCP clients must first send hello{token}", "unauthorized")))
            with contextlib.suppress(Exception):
                await writer.drain()
            return None
        return msg

    def _live_count(self) -> int:
        return sum(1 for s in self.sessions.values() if not s.dead)

    # ------------------------------------------------------------------ commands
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
                key = session_key(fields)
                channel = fields.get("channel_id")
            await getattr(self, f"cmd_{cmd.name}")(client, fields, re)
        except (ProtocolError, SessionCommandError, DriverError) as exc:
            client.send_event(ev.error(exc.message, exc.code, re, key, channel))
        except BadKey as exc:
            client.send_event(ev.error(f"unknown key name: {exc.name!r} (nothing was typed)", "bad_key", re, key, channel))
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
        key = session_key(f)
        cli = f.get("exe") or f.get("cli") or DEFAULT_CLI
        existing = self.sessions.get(key)
        if existing is not None and not existing.dead:
            self.hub.publish(ev.ready_reused(key, f.get("channel_id"), model=existing.model, re=re))
            return
        if existing is not None:
            del self.sessions[key]  # its CLI died: re-create, never "reuse"
        options = _create_options(f, cli)
        options["resume"] = self.resume_tokens.pop(key, None)
        session = Session(key, options, self.hub.publish, on_dead=self._on_dead, kill_grace=self.kill_grace)
        # Registered before the (off-loop) fork: a concurrent create of the key reuses it, kill/shutdown wait
        # for the child and reap it.
        self.sessions[key] = session
        try:
            await session.spawn_async()  # raises SessionCommandError(cli_not_found | spawn_failed | bad_field)
        except BaseException as exc:
            if self.sessions.get(key) is session:
                del self.sessions[key]
            if not isinstance(exc, SessionCommandError):  # cancelled mid-fork: the child may still appear
                self._background(session.kill())
            raise
        if session.killing or session.dead:
            raise SessionCommandError("spawn_failed", "the session was killed while it was starting")
        session.start(re)

    def _background(self, coro: Any) -> None:
        """Run cleanup that must finish even when the command that started it was cancelled."""
        task = asyncio.get_running_loop().create_task(coro)
        self._bg_tasks.add(task)
        task.add_done_callback(self._bg_tasks.discard)

    def _on_dead(self, session: Session) -> None:
        log.info("session %r is dead (exit %s)", session.key, session.exit_code)

    async def cmd_send(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._session(f).send(f.get("content", ""), f.get("id"), re)

    async def cmd_input(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._session(f).input(f.get("content", ""), re)

    async def cmd_keystroke(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._session(f).keystroke(f["keys"], re)

    async def cmd_answer(self, client: Client, f: dict[str, Any], re: Any) -> None:
        await self._session(f).answer(f.get("question_id"), f.get("digit"), f.get("option"), f.get("text"), re)

    async def cmd_interrupt(self, client: Client, f: dict[str, Any], re: Any) -> None:
        self._session(f).interrupt(re)

    async def cmd_list(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(ev.sessions([s.list_item() for s in self.sessions.values()], re))

    async def cmd_dump(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(self._session(f).dump(re))

    async def cmd_kill(self, client: Client, f: dict[str, Any], re: Any) -> None:
        s = self._session(f)
        key = s.key
        code, token = await s.kill(bool(f.get("store_resume")))
        if self.sessions.get(key) is s:
            del self.sessions[key]
        if token:
            self.resume_tokens[key] = token
        self.hub.publish(ev.killed(key, s.channel_id, code, re))

    async def cmd_ping(self, client: Client, f: dict[str, Any], re: Any) -> None:
        client.send_event(ev.pong(re))

    async def cmd_hello(self, client: Client, f: dict[str, Any], re: Any) -> None:
        sub = f.get("subscribe")
        if sub is not None:
            if sub == "*":
                client.subscribed = None
            elif isinstance(sub, list):
                client.subscribed = set(sub)
            else:
                raise ProtocolError("bad_field", 'hello: subscribe must be a list of keys or "*"')
        replayed = 0
        since = f.get("since_seq")
        if since is not None:
            replayed = self.hub.replay(client, since)
        subscribed: list[str] | str = "*" if client.subscribed is None else sorted(client.subscribed)
        client.send_event(ev.capabilities(
            drivers.clis(), subscribed, replayed, self.hub.oldest_seq, re, self.hub.seq, self.hub.daemon_id
        ))


def _create_options(f: dict[str, Any], cli: str) -> dict[str, Any]:
    """The driver's options: the create fields, `cli` resolved from cli/exe, working_dir defaulting to $HOME."""
    options = {k: v for k, v in f.items() if k not in ("cmd", "id", "exe")}
    options["cli"] = cli
    options["working_dir"] = os.path.expanduser(f.get("working_dir") or "~")
    return options


async def run(socket_path: str | None = None, port: int | None = None) -> int:
    """Start, serve until SIGTERM/SIGINT, clean up. Returns the exit status."""
    daemon = Daemon(socket_path, port)
    daemon.install_signal_handlers()
    try:
        await daemon.start()
    except paths.AlreadyRunning as exc:
        print(f"litbridge serve: {exc}", file=sys.stderr)
        return 3
    except (OSError, FileExistsError, PermissionError) as exc:
        print(f"litbridge serve: cannot listen: {exc}", file=sys.stderr)
        await daemon.shutdown()
        return 1
    await daemon.serve_forever()
    return 0
