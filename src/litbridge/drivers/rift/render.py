"""Readable transcript text for a rift session's screen: rift has no PTY in serve mode, so the driver feeds these
bytes (ANSI-styled text, CRLF line ends) into the session's Terminal, which is what `dump` captures and attach paints.

Formatting only: no state, no protocol decisions.
"""

from __future__ import annotations

import json
from typing import Any

BOLD, DIM_ITALIC, RESET = "\x1b[1m", "\x1b[2;3m", "\x1b[0m"
GREEN, RED, YELLOW, CYAN = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[36m"


def _b(text: str) -> bytes:
    """Text to terminal bytes: every newline becomes CRLF (the emulator does not imply CR on LF)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8", "replace")


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def banner(ready: dict) -> bytes:
    return _b(
        f"{BOLD}rift {ready.get('version', '?')}{RESET} · {ready.get('model', '?')} · "
        f"session {ready.get('session', '?')}\n{CYAN}cwd {ready.get('cwd', '?')}{RESET}\n"
    )


def history(messages: list[dict]) -> bytes:
    out = [f"{CYAN}── resumed: {len(messages)} earlier message(s) ──{RESET}\n"]
    for m in messages:
        text = str(m.get("text", ""))
        out.append(f"{BOLD}❯ {text}{RESET}\n" if m.get("role") == "user" else f"{text}\n")
    out.append(f"{CYAN}── end of history ──{RESET}\n")
    return _b("".join(out))


def user(text: str) -> bytes:
    return _b(f"\n{BOLD}❯ {text}{RESET}\n")


def content(delta: str) -> bytes:
    return _b(delta)


def thinking(delta: str) -> bytes:
    return _b(f"{DIM_ITALIC}{delta}{RESET}")


def _args_summary(args: Any) -> str:
    if isinstance(args, dict):
        for key in ("command", "path", "question", "pattern", "url"):
            if key in args:
                return _one_line(str(args[key]))
        return _one_line(json.dumps(args, ensure_ascii=False))
    return _one_line(str(args))


def tool_start(name: str, args: Any) -> bytes:
    return _b(f"\n{CYAN}→ {name} {_args_summary(args)}{RESET}\n")


def tool_result(name: str, ok: bool, preview: str) -> bytes:
    mark = f"{GREEN}✓" if ok else f"{RED}✗"
    return _b(f"{mark} {name}: {_one_line(preview, 200)}{RESET}\n")


def edit_diff(ev: dict) -> bytes:
    lines = [f"✎ {ev.get('path', '?')} +{ev.get('added', 0)} -{ev.get('removed', 0)}"]
    for line in (ev.get("diff") or [])[:20]:
        colour = GREEN if str(line).startswith("+") else RED if str(line).startswith("-") else ""
        lines.append(f"{colour}  {line}{RESET}")
    return _b("\n".join(lines) + "\n")


def ask(question: str, choices: list[str], detail: list[str]) -> bytes:
    lines = [f"\n{YELLOW}? {question}{RESET}"]
    lines += [f"    {d}" for d in detail[:20]]
    lines += [f"  {i}. {c}" for i, c in enumerate(choices, 1)] or ["  (free-text answer)"]
    return _b("\n".join(lines) + "\n")


def review(ev: dict) -> bytes:
    lines = [f"\n{YELLOW}? review {ev.get('tool', 'edit')} {ev.get('path', '?')}{RESET}"]
    for seg in ev.get("segments") or []:
        if isinstance(seg, dict) and not seg.get("same"):
            lines += [f"{RED}  -{x}{RESET}" for x in seg.get("old") or []]
            lines += [f"{GREEN}  +{x}{RESET}" for x in seg.get("new") or []]
    lines += ["  1. apply", "  2. reject"]
    return _b("\n".join(lines[:40]) + "\n")


def answered(label: str) -> bytes:
    return _b(f"{YELLOW}  ↳ {_one_line(label)}{RESET}\n")


def plan(items: list[dict]) -> bytes:
    done = sum(1 for i in items if isinstance(i, dict) and i.get("done"))
    lines = [f"─ plan {done}/{len(items)} ─"]
    lines += [f"  {'☑' if i.get('done') else '☐'} {i.get('text', '')}" for i in items if isinstance(i, dict)]
    return _b("\n".join(lines) + "\n")


def done(stats: dict, reason: str) -> bytes:
    label = {"ok": "done", "cancelled": "cancelled", "error": "failed"}.get(reason, reason)
    secs = (stats.get("duration_ms") or 0) / 1000
    return _b(
        f"\n{CYAN}· {label} · {stats.get('iterations', 0)} iteration(s) · "
        f"{stats.get('output_tokens', 0)} tokens · {secs:.1f}s{RESET}\n"
    )


def notice(text: str, warn: bool = False) -> bytes:
    return _b(f"{YELLOW}! {text}{RESET}\n" if warn else f"{CYAN}· {text}{RESET}\n")
