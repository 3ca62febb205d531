#!/usr/bin/env python3
"""A faithful, stdlib-only fake of `rift --serve` (protocol v1, as rift 2.9.0): JSON events on stdout,
JSON commands on stdin, diagnostics on stderr, sessions under $HOME/.local/share/rift/sessions.

It reproduces rift's documented `--serve` wire behaviour (the events, commands and their order that this module
implements); it deliberately has no model: replies are scripted by directives in the prompt text.

Directives (anywhere in a prompt): `[think]` thinking deltas first; `[bash:CMD]` a bash tool call (runs CMD in
the cwd; approval ask when approve is on); `[write:PATH:TEXT]` a write tool (edit_review when opted in, else an
approval ask); `[ask:QUESTION|choice|choice]` an ask_user question (no choices = free text; never finishes until
answered); `[long]` a long stream (for cancel); `[error]` a model error turn; `[crash]` exit 101 mid-turn;
`[task]` a background task between turns; `[recall]` replies with the first user message of the session.
Anything else gets the reply `You said: <text>`.

Knobs (environment): FAKE_RIFT_SPEED (delay factor, 0 = no delays; default 1), FAKE_RIFT_FAIL=1 (model
server unreachable: exit 1 without `ready`), FAKE_RIFT_PLUGIN=<name> (plugin-trust ask on the first hello),
FAKE_RIFT_APPROVE=0 (approval off by default, like `"approve": false` in the user config), FAKE_RIFT_HANG=1
(the preflight never returns: no `ready`, ever), FAKE_RIFT_SAVE_DELAY=<s> (a slow save between `done` and `context`).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shlex
import subprocess
import sys
import threading
import time

VERSION = "2.9.0"
COMMANDS = [
    "hello",
    "prompt",
    "answer",
    "edit_decision",
    "cancel",
    "undo",
    "list_sessions",
    "list_models",
    "set_model",
    "set_approval",
]
UNKNOWN_CMD = (
    "unknown cmd (expected prompt/answer/edit_decision/cancel/undo/list_sessions/list_models/"
    "set_model/set_approval)"
)
BUSY = "turn in progress — cancel it or wait for done"
BASH_CHOICES_FORCED = ["allow once", "deny"]
SPEED = float(os.environ.get("FAKE_RIFT_SPEED", "1"))
MODELS = ["qwen3:8b", "qwen2.5-coder:14b", "llama3.1:8b", "openai/gpt-4o-mini"]


def sleep(seconds: float) -> None:
    if SPEED > 0 and seconds > 0:
        time.sleep(seconds * SPEED)


def diag(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Cancelled(Exception):
    """The running turn was cancelled (cancel command or stdin EOF)."""


class Rift:
    """One serve process: the stdin loop (this thread) plus an agent thread that runs turns in order."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.model: str = args.model
        self.num_ctx: int = args.num_ctx
        self.cwd = os.getcwd()
        self.approve = os.environ.get("FAKE_RIFT_APPROVE", "1") != "0" or args.approve
        self.edit_review = False
        self.out_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.closed = False  # stdin reached EOF: no further events
        self.busy = False
        self.next_id = 1  # one counter for ask and edit_review ids
        self.next_task = 1
        self.pending: dict[int, dict] = {}  # open asks/reviews: id -> {"kind", "event", "reply"}
        self.dead_ids: set[int] = set()
        self.cancel = threading.Event()
        self.jobs: queue.Queue = queue.Queue()
        self.messages: list[dict] = []
        self.undo_snapshot: dict[str, str | None] = {}
        self.allow_all_bash = False
        self.allowed_progs: set[str] = set()
        self.allow_writes = False
        self.hello_seen = False
        self.plugin = os.environ.get("FAKE_RIFT_PLUGIN", "")
        self.sessions_dir = os.path.join(os.path.expanduser("~"), ".local", "share", "rift", "sessions")
        self.session_path = self._open_session(args)

    # ---------- output ----------
    def emit(self, event: str, **fields: object) -> None:
        """Write one event line, blocking and flushed (a stalled reader stalls us, like rift)."""
        line = json.dumps({"event": event, **fields}, ensure_ascii=False)
        with self.out_lock:
            if self.closed:
                return
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    # ---------- sessions ----------
    def _open_session(self, args: argparse.Namespace) -> str:
        os.makedirs(self.sessions_dir, exist_ok=True)
        path = None
        if args.resume:
            path = os.path.abspath(args.resume)
            self._load(path)
        elif args.cont:
            files = [
                os.path.join(self.sessions_dir, f)
                for f in os.listdir(self.sessions_dir)
                if f.endswith(".json")
            ]
            files = [f for f in files if os.path.getsize(f) > 0]
            if files:
                path = max(files, key=os.path.getmtime)
                self._load(path)
            else:
                diag("no previous session found; starting fresh")
        if path is None:
            stamp = int(time.time())
            for n in range(1000):
                name = f"{stamp}.json" if n == 0 else f"{stamp}-{n}.json"
                path = os.path.join(self.sessions_dir, name)
                try:
                    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                    break
                except FileExistsError:
                    continue
        elif not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        return path

    def _load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
        except FileNotFoundError:
            diag(f"no session at {path}; starting fresh")
            return
        if not raw.strip():
            return
        try:
            data = json.loads(raw)
            self.messages = list(data["messages"])
        except (ValueError, KeyError, TypeError):
            os.replace(path, path + ".corrupt")
            diag(f"warning: corrupt session moved to {path}.corrupt; starting fresh")
            return
        diag(f"resumed session {path} ({len(self.messages)} messages)")

    def save(self) -> None:
        data = {"model": self.model, "saved_at": int(time.time()), "cwd": self.cwd, "messages": self.messages}
        tmp = (
            self.session_path[: -len(".json")] + ".json.tmp"
            if self.session_path.endswith(".json")
            else self.session_path + ".tmp"
        )
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, self.session_path)

    def history(self) -> list[dict]:
        out = []
        for m in self.messages:
            if m.get("role") == "user" and not str(m.get("content", "")).startswith("[system]"):
                out.append({"role": "user", "text": m["content"]})
            elif m.get("role") == "assistant" and not m.get("tool_calls"):
                out.append({"role": "assistant", "text": m.get("content", "")})
        return out

    def used_tokens(self) -> int:
        return sum(len(str(m.get("content", ""))) // 4 + 4 for m in self.messages) + 1200

    def list_sessions(self) -> list[dict]:
        items = []
        for name in os.listdir(self.sessions_dir):
            path = os.path.join(self.sessions_dir, name)
            if not name.endswith(".json") or os.path.getsize(path) == 0:
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            users = [
                m
                for m in data.get("messages", [])
                if m.get("role") == "user" and not str(m.get("content", "")).startswith("[system]")
            ]
            title = users[0]["content"].splitlines()[0][:100] if users else "(empty session)"
            items.append(
                {
                    "path": path,
                    "title": title,
                    "saved_at": int(data.get("saved_at", 0)),
                    "cwd": data.get("cwd", ""),
                    "model": data.get("model", ""),
                    "turns": len(users),
                    "_mtime": os.path.getmtime(path),
                }
            )
        items.sort(key=lambda i: i.pop("_mtime"), reverse=True)
        return items[:200]

    # ---------- startup ----------
    def start(self) -> None:
        diag("approval: write/edit/bash ask first" if self.approve else "approval: off (auto-approve)")
        diag("skills: explain")
        sleep(random.uniform(0.1, 0.3))  # model preflight
        if os.environ.get("FAKE_RIFT_HANG") == "1":  # a preflight that never returns
            threading.Event().wait()
        if os.environ.get("FAKE_RIFT_FAIL") == "1":
            diag(
                f"Error: cannot reach Ollama at http://127.0.0.1:11434 or model '{self.model}' missing: "
                "error sending request: connection refused"
            )
            sys.exit(1)
        self.emit(
            "ready",
            model=self.model,
            session=self.session_path,
            cwd=self.cwd,
            version=VERSION,
            protocol_version=1,
            num_ctx=self.num_ctx,
            approve=self.approve,
            skills=[{"name": "explain", "description": "Explain the code under discussion"}],
            commands=COMMANDS,
        )
        self.emit("context", used=self.used_tokens(), limit=self.num_ctx)
        if self.messages:
            self.emit("history", messages=self.history())
        threading.Thread(target=self.agent_loop, daemon=True).start()

    # ---------- stdin loop ----------
    def serve(self) -> None:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                cmd = json.loads(line)
            except ValueError as e:
                self.emit("warning", text=f"bad command json: {e}")
                continue
            self.dispatch(cmd)
        self.on_eof()

    def dispatch(self, cmd: object) -> None:
        name = cmd.get("cmd") if isinstance(cmd, dict) else None
        if not isinstance(cmd, dict) or name not in COMMANDS:
            self.emit("warning", text=UNKNOWN_CMD)
            return
        getattr(self, "cmd_" + name)(cmd)

    def cmd_hello(self, cmd: dict) -> None:
        self.edit_review = cmd.get("edit_review") is True
        if isinstance(cmd.get("approve"), bool):
            self.approve = cmd["approve"]
        self.emit("capabilities", protocol_version=1, edit_review=self.edit_review, approve=self.approve)
        if not self.hello_seen:
            self.hello_seen = True
            self.offer_plugin_trust()

    def offer_plugin_trust(self) -> None:
        if not self.plugin:
            return
        name, self.plugin = self.plugin, ""
        if not self.approve:
            self.emit(
                "info", text=f"plugin '{name}' skipped: approval is off, untrusted manifests are not loaded"
            )
            return

        def wait() -> None:
            answer = self.ask(
                f"Project plugin '{name}' declares 1 tool(s) — {name}_run. "
                "Trust this manifest on this machine?",
                ["trust", "skip"],
                [f"{name}_run: ./run.sh"],
                cancellable=False,
            )
            if answer.strip().lower() in ("trust", "yes", "y"):
                self.emit("info", text=f"plugin '{name}' trusted: 1 tool(s) registered")
            else:
                self.emit("info", text=f"plugin '{name}' skipped")

        threading.Thread(target=wait, daemon=True).start()

    def cmd_prompt(self, cmd: dict) -> None:
        text = cmd.get("text")
        if not isinstance(text, str) or not text.strip():
            return  # silently ignored: no event, no turn, no done
        m = re.match(r"/skill:(\S+)", text)
        if m and m.group(1) != "explain":
            self.emit("warning", text=f"unknown skill '{m.group(1)}'")
            return
        with self.state_lock:
            if self.busy:
                self.emit("warning", text=BUSY)
                return
            self.busy = True
            self.cancel.clear()
        self.offer_plugin_trust()
        self.jobs.put(("turn", text))

    def cmd_answer(self, cmd: dict) -> None:
        rid = cmd.get("id")
        text = cmd.get("text", "")
        self.resolve(rid, "ask", text if isinstance(text, str) else "")

    def cmd_edit_decision(self, cmd: dict) -> None:
        content = cmd.get("content")
        self.resolve(
            cmd.get("id"),
            "review",
            {"apply": cmd.get("apply") is True, "content": content if isinstance(content, str) else None},
        )

    def resolve(self, rid: object, kind: str, reply: object) -> None:
        if not isinstance(rid, int) or isinstance(rid, bool):
            return
        with self.state_lock:
            entry = self.pending.get(rid)
            if entry is None or entry["kind"] != kind:
                return  # unknown, stale or wrong-kind ids are silently ignored
            del self.pending[rid]
        entry["reply"] = reply
        entry["done"].set()

    def cmd_cancel(self, cmd: dict) -> None:
        if not self.busy:
            return
        with self.state_lock:
            reviews = [self.pending.pop(i) for i, e in list(self.pending.items()) if e["kind"] == "review"]
        for entry in reviews:  # closed at once, before the turn's "turn cancelled" warning
            self.emit("edit_review_closed", id=entry["id"])
        self.cancel.set()
        for entry in reviews:
            entry["done"].set()

    def cmd_undo(self, cmd: dict) -> None:
        if self.busy:
            self.emit("warning", text="turn in progress — cancel it or wait before undoing")
            return
        self.jobs.put(("undo", None))

    def cmd_list_sessions(self, cmd: dict) -> None:
        self.emit("sessions", items=self.list_sessions())

    def cmd_list_models(self, cmd: dict) -> None:
        def probe() -> None:
            sleep(random.uniform(0.1, 2.5))
            self.emit(
                "models", models=MODELS if self.model in MODELS else [*MODELS, self.model], current=self.model
            )

        threading.Thread(target=probe, daemon=True).start()

    def cmd_set_model(self, cmd: dict) -> None:
        model = cmd.get("model")
        if not isinstance(model, str) or not model.strip():
            self.emit("warning", text="set_model needs a 'model' field")
        elif self.busy:
            self.emit("warning", text="turn in progress — cancel it or wait before switching models")
        else:
            self.jobs.put(("set_model", model.strip()))

    def cmd_set_approval(self, cmd: dict) -> None:
        if not isinstance(cmd.get("approve"), bool):
            self.emit("warning", text="set_approval needs a boolean 'approve' field")
            return
        self.approve = cmd["approve"]
        self.emit("approval_changed", approve=self.approve)

    def on_eof(self) -> None:
        """EOF: drop pending asks (= deny), cancel the turn, let the agent save, exit 0; no more events."""
        with self.out_lock:
            self.closed = True
        with self.state_lock:
            for entry in self.pending.values():
                entry["done"].set()
            self.pending.clear()
        self.cancel.set()
        self.jobs.put(("exit", None))

    # ---------- agent thread ----------
    def agent_loop(self) -> None:
        while True:
            kind, arg = self.jobs.get()
            if kind == "exit":
                self.save()
                os._exit(0)
            if kind == "turn":
                self.run_turn(arg)
            elif kind == "undo":
                self.do_undo()
            elif kind == "set_model":
                sleep(0.2)
                if "missing" in arg:
                    self.emit("warning", text=f"model switch failed: model '{arg}' not found")
                else:
                    self.model = arg
                    self.emit("model_changed", model=arg, num_ctx=self.num_ctx, note="")
                    self.emit("context", used=self.used_tokens(), limit=self.num_ctx)

    def do_undo(self) -> None:
        if not self.undo_snapshot:
            self.emit("warning", text="nothing to undo (only write/edit tool changes are tracked)")
            return
        for path, old in self.undo_snapshot.items():
            if old is None:
                os.remove(path)
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(old)
        paths = "\n".join("  " + p for p in self.undo_snapshot)
        self.undo_snapshot = {}
        self.emit(
            "info",
            text=f"restored to pre-turn state:\n{paths}\n(note: changes made via bash are not tracked)",
        )

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled

    def stream(self, event: str, text: str, floor: float = 0.0) -> int:
        """Emit `text` as 1-3 word deltas with leading spaces and occasional whitespace-only pieces."""
        words = text.split(" ")
        pieces, i = [], 0
        while i < len(words):
            n = random.randint(1, 3)
            chunk = " ".join(words[i : i + n])
            if i > 0 and random.random() < 0.08:
                pieces += [" ", chunk]  # a whitespace-only delta, still part of the text
            else:
                pieces.append(chunk if i == 0 else " " + chunk)
            i += n
        for p in pieces:
            self.check()
            delay = random.uniform(0.01, 0.05) * SPEED
            time.sleep(max(delay, floor))
            self.check()
            self.emit(event, text=p)
        return len(pieces)

    def ask(self, question: str, choices: list[str], detail: list[str], cancellable: bool = True) -> str:
        entry = self.register("ask")
        self.emit("ask", id=entry["id"], question=question, detail=detail, choices=choices)
        return self.wait(entry, cancellable) or ""

    def register(self, kind: str) -> dict:
        with self.state_lock:
            rid = self.next_id
            self.next_id += 1
            entry = {"id": rid, "kind": kind, "done": threading.Event(), "reply": None}
            self.pending[rid] = entry
        return entry

    def wait(self, entry: dict, cancellable: bool) -> object:
        while not entry["done"].wait(0.02):
            if cancellable and self.cancel.is_set():
                self.dead_ids.add(entry["id"])  # the ask stays dead; a late answer does nothing
                raise Cancelled
        if cancellable:
            self.check()
        return entry["reply"]

    def run_turn(self, text: str) -> None:
        started = time.monotonic()
        self.undo_snapshot = {}
        self.messages.append({"role": "user", "content": text})
        stats = {"iterations": 0, "output_tokens": 0}
        reply_parts: list[str] = []
        calls = re.findall(r"\[(bash|write|ask):([^\]]*)\]", text)
        error = None
        try:
            stats["iterations"] = 1
            self.emit("iteration", n=1)
            sleep(0.2)  # prefill
            self.check()
            if "[think]" in text:
                stats["output_tokens"] += self.stream(
                    "thinking", "Let me think about what the user wants here."
                )
            if "[error]" in text:
                stats["output_tokens"] += self.stream("content", "Starting")
                error = "error: model server returned 500 Internal Server Error: fake failure"
            elif "[crash]" in text:
                self.stream("content", "This reply will never finish because")
                diag("thread 'main' panicked at crates/rift-tui/src/serve.rs: fake crash")
                os._exit(101)
            elif "[long]" in text:
                body = " ".join(f"word{i}" for i in range(3000))
                reply_parts.append("")
                for piece_text in body.split(" "):
                    self.check()
                    time.sleep(max(random.uniform(0.01, 0.03) * SPEED, 0.01))
                    self.check()
                    reply_parts[-1] += " " + piece_text
                    self.emit("content", text=" " + piece_text)
                    stats["output_tokens"] += 1
            elif calls:  # one LLM response with every call, run one at a time, then a closing iteration
                lead = {
                    "bash": "Running the command.",
                    "write": "Writing the file.",
                    "ask": "I need to ask you something.",
                }[calls[0][0]]
                stats["output_tokens"] += self.stream("content", lead)
                reply_parts.append(lead)
                cancelled = False
                for kind, arg in calls:
                    if cancelled:  # the remaining calls still get a start and a cancelled result
                        name, args = self.tool_call(kind, arg)
                        self.emit("tool_start", name=name, args=json.dumps(args))
                        self.tool_result(name, False, "ERROR: cancelled by user")
                        continue
                    try:
                        self.run_tool(kind, arg)
                    except Cancelled:
                        cancelled = True
                if cancelled:
                    raise Cancelled
                stats["iterations"] += 1
                self.emit("iteration", n=stats["iterations"])
                sleep(0.2)
                self.check()
                final = "Done: " + self.last_tool_summary
                stats["output_tokens"] += self.stream("content", final)
                reply_parts.append(final)
            else:
                if "[recall]" in text:
                    first = [m["content"] for m in self.messages[:-1] if m.get("role") == "user"]
                    final = (
                        f"Your first message was: {first[0]}"
                        if first
                        else "This session has no earlier messages."
                    )
                else:
                    final = "You said: " + text
                stats["output_tokens"] += self.stream("content", final)
                reply_parts.append(final)
            reason = "ok"
        except Cancelled:
            reason = "cancelled"
        self.messages.append({"role": "assistant", "content": "".join(reply_parts).strip()})
        if reason == "cancelled":
            self.emit("warning", text="turn cancelled")
            stats_out = self.stats(stats, started)
        elif error:
            self.emit("warning", text=error)
            stats_out = {
                "iterations": 0,
                "prompt_tokens": 0,
                "billed_prompt_tokens": 0,
                "output_tokens": 0,
                "duration_ms": 0,
                "tokens_per_sec": 0.0,
            }
        else:
            stats_out = self.stats(stats, started)
        with self.state_lock:
            orphans = [i for i, e in self.pending.items() if e["kind"] == "review"]
            for i in orphans:
                self.pending.pop(i)
        for i in orphans:
            self.emit("edit_review_closed", id=i)
        with self.state_lock:
            self.busy = False  # cleared before done is written
        self.emit("done", stats=stats_out)
        if self.closed:
            return
        time.sleep(
            float(os.environ.get("FAKE_RIFT_SAVE_DELAY", "0"))
        )  # the save/compaction window after done
        try:
            self.save()
        except OSError as e:
            self.emit("warning", text=f"session save failed: {e}")
        self.emit("context", used=self.used_tokens(), limit=self.num_ctx)
        if "[task]" in text:
            tid, self.next_task = self.next_task, self.next_task + 1
            self.emit("task_started", id=tid, label="bash: sleep 0.1 && echo bg")
            sleep(0.1)
            self.emit("task_finished", id=tid, label="bash: sleep 0.1 && echo bg", ok=True, preview="bg")

    def stats(self, stats: dict, started: float) -> dict:
        ms = int((time.monotonic() - started) * 1000)
        prompt = self.used_tokens()
        out = stats["output_tokens"]
        return {
            "iterations": stats["iterations"],
            "prompt_tokens": prompt,
            "billed_prompt_tokens": prompt // 2,
            "output_tokens": out,
            "duration_ms": ms,
            "tokens_per_sec": round(out / max(ms / 1000, 0.001), 1),
        }

    # ---------- tools ----------
    last_tool_summary = ""

    def tool_result(self, name: str, ok: bool, text: str) -> None:
        preview = " ".join(text.strip().splitlines())
        if len(preview.encode()) > 200:
            preview = preview.encode()[:200].decode("utf-8", "ignore") + "…"
        self.last_tool_summary = preview
        self.emit("tool_result", name=name, ok=ok, preview=preview)
        self.messages.append({"role": "tool", "content": text})

    @staticmethod
    def tool_call(kind: str, arg: str) -> tuple[str, dict]:
        name = {"bash": "bash", "write": "write", "ask": "ask_user"}[kind]
        if kind == "bash":
            return name, {"command": arg}
        if kind == "write":
            path, _, content = arg.partition(":")
            return name, {"path": path, "content": content}
        question, *choices = arg.split("|")
        return name, {"question": question, "choices": choices}

    def run_tool(self, kind: str, arg: str) -> None:
        name, args = self.tool_call(kind, arg)
        self.messages.append(
            {"role": "assistant", "content": "", "tool_calls": [{"name": name, "arguments": args}]}
        )
        self.emit("tool_start", name=name, args=json.dumps(args))
        try:
            getattr(self, "tool_" + kind)(args)
        except Cancelled:
            self.tool_result(name, False, "ERROR: cancelled by user")
            raise

    def tool_bash(self, args: dict) -> None:
        cmd = args["command"]
        prog = (shlex.split(cmd) or [""])[0]
        if self.approve and not self.allow_all_bash and prog not in self.allowed_progs:
            choices = ["allow once", f"always allow '{prog} *'", "allow all bash this session", "deny"]
            answer = self.ask(f"Allow bash: {cmd[:120]}", choices, [])
            if answer == choices[1]:
                self.allowed_progs.add(prog)
            elif answer == choices[2]:
                self.allow_all_bash = True
            elif answer != choices[0]:
                self.tool_result(
                    "bash",
                    False,
                    "ERROR: the user DENIED this bash action. Do not retry it; "
                    "ask the user what to do instead.",
                )
                return
        proc = subprocess.Popen(
            cmd,
            shell=True,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=False,
        )
        deadline = time.monotonic() + 60
        while proc.poll() is None:
            if self.cancel.is_set() or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                self.check()
                self.tool_result("bash", False, "ERROR: command timed out after 60s")
                return
            time.sleep(0.01)
        out = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
        self.tool_result(
            "bash",
            proc.returncode == 0,
            out if proc.returncode == 0 else f"ERROR: exit code {proc.returncode}\n{out}",
        )

    def tool_write(self, args: dict) -> None:
        path = os.path.join(self.cwd, args["path"])
        new = args["content"].replace("\\n", "\n")
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        old_lines, new_lines = (old or "").splitlines(), new.splitlines()
        diff = ["@@ line 1 @@", *("-" + line for line in old_lines), *("+" + line for line in new_lines)]
        if self.approve and self.edit_review:
            entry = self.register("review")
            self.emit(
                "edit_review",
                id=entry["id"],
                tool="write",
                path=path,
                old=old or "",
                new=new,
                segments=[{"same": False, "old": old_lines, "new": new_lines}],
            )
            reply = self.wait(entry, True)
            if not isinstance(reply, dict) or not reply["apply"]:
                self.tool_result(
                    "write",
                    False,
                    "ERROR: the user DENIED this write action. Do not retry it; "
                    "ask the user what to do instead.",
                )
                return
            if reply["content"] is not None:
                new = reply["content"]
                new_lines = new.splitlines()
        elif self.approve and not self.allow_writes:
            choices = [
                "allow",
                "always allow write this session",
                f"always allow 'Edit({os.path.dirname(args['path']) or '.'}/**)'",
                "deny",
            ]
            answer = self.ask(f"Allow write: {args['path']} ({len(new_lines)} lines)", choices, diff)
            if answer == choices[1]:
                self.allow_writes = True
            elif answer not in (choices[0], choices[2]):
                self.tool_result(
                    "write",
                    False,
                    "ERROR: the user DENIED this write action. Do not retry it; "
                    "ask the user what to do instead.",
                )
                return
        self.undo_snapshot.setdefault(path, old)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        self.tool_result("write", True, f"wrote {len(new_lines)} lines to {args['path']}")
        self.emit(
            "edit_diff",
            path=path,
            added=len(new_lines),
            removed=len(old_lines),
            diff=["@@ line 1 @@", *("-" + x for x in old_lines), *("+" + x for x in new_lines)],
        )

    def tool_ask(self, args: dict) -> None:
        answer = self.ask(args["question"], args["choices"], [])
        self.tool_result("ask_user", True, answer or "(no answer)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="rift", exit_on_error=True)
    p.add_argument("--serve", action="store_true")
    p.add_argument("-m", "--model", default=os.environ.get("RIFT_MODEL", "qwen3:8b"))
    p.add_argument("--host", default=os.environ.get("RIFT_HOST", "http://127.0.0.1:11434"))
    p.add_argument("--num-ctx", type=int, default=32768)
    p.add_argument("--temp", type=float, default=0.2)
    p.add_argument("--effort")
    p.add_argument("--max-iterations", type=int, default=40)
    p.add_argument("-c", "--continue", dest="cont", action="store_true")
    p.add_argument("--resume")
    p.add_argument("--approve", action="store_true")
    p.add_argument("--trace")
    p.add_argument("--version", action="version", version=f"rift {VERSION}")
    args = p.parse_args(argv)  # unknown flags exit 2, like clap
    if not args.serve:
        p.error("this fake only implements --serve")
    if args.effort is not None and args.effort not in ("low", "medium", "high"):
        print(f"Error: invalid effort '{args.effort}'", file=sys.stderr)
        sys.exit(1)
    return args


def main() -> None:
    args = parse_args(sys.argv[1:])
    rift = Rift(args)
    rift.start()
    try:
        rift.serve()
    except BrokenPipeError:
        os._exit(0)
    threading.Event().wait()  # the agent thread exits the process after saving


if __name__ == "__main__":
    main()
