"""Shell integration for the generic driver: OSC 133 semantic prompt marks from bash, zsh, fish and Python.

At spawn the program is given hooks that print `ESC ] 133 ; A BEL` (prompt start), `C` (command start) and
`D ; <exit status>` (command end) around each command, without touching the user's dotfiles:

- bash: `PROMPT_COMMAND` / `PS0` in the environment (so `--norc` shells get them too) and, when bash would read
  ~/.bashrc, an `--rcfile` that sources it first and then puts the hook back in front;
- zsh: `ZDOTDIR` pointing at a folder whose startup files source the user's, then add precmd/preexec hooks;
- fish: `--init-command` with `fish_preexec` / `fish_postexec` / `fish_prompt` event handlers;
- python (the REPL): `PYTHONSTARTUP` puts the marks in `sys.ps1` (`D`, `A`, the prompt, `B`) and `sys.ps2`, as
  plain strings (no Python code runs to make a prompt, where the REPL would swallow a Ctrl-C): Python has no
  command-start hook, so its output is what follows the echoed input.

`Integration.feed(bytes)` cuts the marks from the raw output (a mark may span reads) and keeps the command's
output bytes; `output()` is that output as text. A program whose marks never arrive (the caller overrode the
variables, an old shell) is simply not `active`: the driver falls back to quiescence.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_MARK_RE = re.compile(rb"\x1b\]133;([A-Za-z])(?:;([^\x07\x1b]*))?(?:\x07|\x1b\\)")
_CSI_RE = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]"
)
_BASH_HOOK = (
    'printf "\\033]133;D;%s\\007\\033]133;A\\007" "$?"; '
    "case \"$PS1\" in *'133;B'*) ;; *) PS1=\"$PS1\"'\\[\\033]133;B\\007\\]' ;; esac"
)
"""PROMPT_COMMAND: the exit status (`D`) and prompt start (`A`), then `B` appended to PS1 once, so `B` says the
prompt is drawn (a send typed before that would be echoed twice: once by the tty, once by readline)."""
_BASH_PS0 = "\x1b]133;C\x07"
OUTPUT_MAX = 1 << 20  # bytes of one command's output kept for `complete`


class MarkReader:
    """OSC 133 marks cut from a TUI's raw output, without keeping the output: for a program that marks its own
    zones (Pi draws `A`/`B`/`C` around each rendered message). A mark split across reads completes with the next
    `feed`. Returns (letter, argument) pairs."""

    def __init__(self) -> None:
        self._carry = b""

    def feed(self, data: bytes) -> list[tuple[str, str | None]]:
        buf = self._carry + data
        out = [
            (m.group(1).decode(), m.group(2).decode("utf-8", "replace") if m.group(2) is not None else None)
            for m in _MARK_RE.finditer(buf)
        ]
        cut = buf.rfind(b"\x1b")
        tail = buf[cut:] if cut >= 0 else b""
        partial = b"\x1b]133;".startswith(tail[:6]) and b"\x07" not in tail and len(tail) < 64
        self._carry = tail if tail and partial else b""
        return out


@dataclass
class Mark:
    kind: str  # prompt (A), input (B), command (C), end (D)
    exit_code: int | None = None


@dataclass
class Integration:
    kind: str  # bash, zsh, fish, python
    args: list[str]
    env: dict[str, str]
    tmpdir: str
    active: bool = False
    """A prompt mark arrived: the program reports its own turn ends."""
    running: bool = False
    """A command is running (between `C` and `D`, or, for Python, between the send and the next prompt)."""
    _carry: bytes = b""
    _out: bytearray = field(default_factory=bytearray)
    _sent: str = ""
    prompt_drawn: bool = False
    """The prompt is on screen (`B` after the last `D`): typing now is not echoed ahead of it."""
    has_input_mark: bool = False  # a `B` was ever seen (or is installed: bash, zsh): wait for it after `D`
    _enters: int = 0  # Python: lines the send typed (each gets a prompt back: `>>>`, or `...` mid-statement)
    _prompts: int = 0  # ... and prompts seen since
    _interrupting: bool = False  # Ctrl-C was pressed for this send: its prompt ends it, echoed or not
    _ctrl_c: int = 0  # Ctrl-Cs written that no prompt has answered yet

    @property
    def no_command_mark(self) -> bool:
        """True when the program has no command-start hook (Python): a `D` ends the open turn by itself."""
        return self.kind == "python"

    def expect_command(self, text: str) -> None:
        """A send is being typed: its output starts now (Python) or at the next `C` mark (shells)."""
        self._sent = text
        self._interrupting = False
        self._out.clear()
        self.prompt_drawn = False
        if self.no_command_mark:
            self.running = True
            self._enters = text.count("\n") + 1
            self._prompts = 0

    def ctrl_c_written(self, count: int = 1) -> None:
        """Ctrl-C went into the terminal (the driver's presses, keys typed through attach). Python: the REPL may
        answer it at a prompt after the command it meant has ended, just as the next send is typed; such a
        prompt, coming before the send's echo, is not the send's end."""
        self._ctrl_c += count

    def interrupted(self) -> None:
        """Ctrl-C: the next prompt ends the command, whatever lines of the send were left (or whether it was read)."""
        self._enters = 0
        self._interrupting = True

    def feed(self, data: bytes) -> list[Mark]:
        buf = self._carry + data
        marks: list[Mark] = []
        pos = 0
        for m in _MARK_RE.finditer(buf):
            self._keep(buf[pos : m.start()])
            pos = m.end()
            marks.append(self._mark(m.group(1).decode(), m.group(2)))
        rest = buf[pos:]
        cut = rest.rfind(b"\x1b")
        tail = rest[cut:] if cut >= 0 else b""
        if tail and b"\x1b]133;".startswith(tail[:6]) and b"\x07" not in tail and len(tail) < 64:
            self._keep(rest[:cut])  # a mark split across reads: finish it with the next feed
            self._carry = tail
        else:
            self._keep(rest)
            self._carry = b""
        return marks

    def _keep(self, chunk: bytes) -> None:
        if self.running and chunk and len(self._out) < OUTPUT_MAX:
            self._out += chunk[: OUTPUT_MAX - len(self._out)]

    def _mark(self, kind: str, arg: bytes | None) -> Mark:
        if kind == "A":
            self.active = True
            if not self.has_input_mark and not self.running:
                self.prompt_drawn = True  # no `B` from this program: the prompt text follows `A`
            if arg == b"k=s":  # a secondary prompt (`... `): one more typed line consumed
                self._prompts += 1
                return Mark("continuation")
            return Mark("prompt")
        if kind == "B":
            self.has_input_mark = True
            self.prompt_drawn = not self.running
            return Mark("input")
        if kind == "C":
            self.prompt_drawn = False
            if not self.running:  # a pasted multi-line input: one `C` per command, one `D` after the last
                self._out.clear()
            self.running = True
            return Mark("command")
        if kind == "D":
            code: int | None = None
            if arg and arg.strip().lstrip(b"-").isdigit():
                code = int(arg.strip())
            self.active = True
            answers_ctrl_c = self._ctrl_c > 0  # each Ctrl-C written gets at most one prompt back
            if answers_ctrl_c:
                self._ctrl_c -= 1
            if self.no_command_mark and self.running:
                if answers_ctrl_c and not self._interrupting and not self._echoed():
                    # a prompt drawn before the REPL read this send: its answer to a Ctrl-C that came first (one
                    # pressed again as the previous command ended), not this send's end
                    self._out.clear()
                    return Mark("other")
                self._prompts += 1
                if self._prompts < self._enters:
                    return Mark("continuation")  # a multi-line send: more of its lines are still to run
            self.running = False
            # without `B` marks (fish: the prompt text follows the marks in the same write) `D` is enough
            self.prompt_drawn = not self.has_input_mark
            return Mark("end", code)
        return Mark("other")

    def _echoed(self) -> bool:
        """Python: the REPL has echoed the start of the send's first line (it reads its input behind any key
        typed before it; an empty send has nothing to wait for)."""
        lines = self._sent.splitlines()
        first = lines[0].strip() if lines else ""  # a blank first line gets its own prompt: that one counts
        if not first:
            return True
        shown = _CSI_RE.sub(b"", bytes(self._out)).decode("utf-8", "replace")
        return first[:32] in shown

    def output(self) -> str:
        """The command's output as text: escapes removed, CRLF folded, a line's `\\r` overwrites applied."""
        return self._text(streaming=False)

    def partial_output(self) -> str:
        """The output so far, for streaming while the command runs. Python: the echo of the typed input arrives
        in pieces, and a piece (`import ti`) matches no sent line yet, so an unfinished last line that could
        still be echo (a prompt plus the start of a sent line) is held back until its line ends."""
        return self._text(streaming=True)

    def _text(self, streaming: bool) -> str:
        raw = _CSI_RE.sub(b"", bytes(self._out).replace(b"\r\n", b"\n"))
        lines = [ln.rsplit("\r", 1)[-1] for ln in raw.decode("utf-8", "replace").split("\n")]
        if self.no_command_mark:
            lines = self._drop_echo(lines)
            if streaming and lines and self._maybe_echo(lines[-1]):
                lines.pop()
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        return "\n".join(ln.rstrip() for ln in lines)

    def _maybe_echo(self, line: str) -> bool:
        """An unfinished line that is a prompt and/or the start of a line of the send (Python's echo so far)."""
        shown = _unprompted(line)
        if not shown or any(p.startswith(shown) for p in (">>>", "...")):  # a prompt still arriving
            return True
        return any(s.strip().startswith(shown) for s in self._sent.splitlines())

    def _drop_echo(self, lines: list[str]) -> list[str]:
        """Python: the echoed input (and its `... ` continuation prompts) precede the output."""
        sent = [s.strip() for s in self._sent.splitlines() if s.strip()]
        i = 0
        while i < len(lines):
            shown = _unprompted(lines[i])
            if sent and shown == sent[0]:
                sent.pop(0)
                i += 1
            elif not shown and (not sent or lines[i].strip() in ("...", "")):
                i += 1
            else:
                break
        return lines[i:]


def _unprompted(line: str) -> str:
    """A line of the Python REPL without its leading `>>>` / `...` prompts."""
    shown = line.strip()
    for p in (">>>", "..."):
        if shown.startswith(p):
            shown = shown[len(p) :].strip()
    return shown


def _interactive(args: list[str], forbidden: tuple[str, ...]) -> bool:
    """No script or command string among the arguments (only options)."""
    return not any(a in forbidden or not a.startswith("-") for a in args)


def integrate(program: str, args: list[str], caller_env: dict[str, str]) -> Integration | None:
    """Hooks for an interactive bash, zsh, fish or Python REPL; None for anything else."""
    name = Path(program).name
    for suffix in (".exe",):
        name = name.removesuffix(suffix)
    if name in ("bash", "zsh", "fish") and not _interactive(args, ("-c",)):
        return None
    if name.startswith("python") and not _interactive(args, ("-c", "-m")):
        return None
    if name == "bash":
        return _bash(args)
    if name == "zsh":
        return _zsh(args, caller_env)
    if name == "fish":
        return _fish(args)
    if re.fullmatch(r"python(\d+(\.\d+)?)?", name):
        return _python(args)
    return None


def _tmp(kind: str) -> str:
    return tempfile.mkdtemp(prefix=f"litbridge-{kind}-")


def _bash(args: list[str]) -> Integration:
    tmp = _tmp("bash")
    env = {"PROMPT_COMMAND": _BASH_HOOK, "PS0": _BASH_PS0}
    out = list(args)
    if (
        "--norc" not in args
        and "--rcfile" not in args
        and "--init-file" not in args
        and "--posix" not in args
    ):
        rc = Path(tmp) / "bashrc"
        rc.write_text(
            "# litbridge: the user's own ~/.bashrc, then the OSC 133 hooks in front\n"
            "[ -f ~/.bashrc ] && . ~/.bashrc\n"
            f"__lb_hook={shlex.quote(_BASH_HOOK)}\n"
            'PROMPT_COMMAND="${PROMPT_COMMAND//"$__lb_hook"/}"\n'
            'PROMPT_COMMAND="$__lb_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"\n'
            f"case \"$PS0\" in *$'\\e]133;C'*) ;; *) PS0=$'\\e]133;C\\a'\"$PS0\" ;; esac\n"
            "export -n PROMPT_COMMAND PS0\n",
            encoding="utf-8",
        )
        out = ["--rcfile", str(rc), *out]
    return Integration("bash", out, env, tmp, has_input_mark=True)


def _zsh(args: list[str], caller_env: dict[str, str]) -> Integration:
    tmp = _tmp("zsh")
    orig = caller_env.get("ZDOTDIR") or os.environ.get("ZDOTDIR") or os.path.expanduser("~")
    for f in (".zshenv", ".zprofile", ".zlogin"):
        (Path(tmp) / f).write_text(f"[ -f {shlex.quote(orig)}/{f} ] && . {shlex.quote(orig)}/{f}\n")
    (Path(tmp) / ".zshrc").write_text(
        f"[ -f {shlex.quote(orig)}/.zshrc ] && ZDOTDIR={shlex.quote(orig)} . {shlex.quote(orig)}/.zshrc\n"
        "__lb_precmd() { printf '\\033]133;D;%s\\007\\033]133;A\\007' \"$?\" }\n"
        'PS1="$PS1%{"$\'\\e]133;B\\a\'"%}"\n'
        "__lb_preexec() { printf '\\033]133;C\\007' }\n"
        "autoload -Uz add-zsh-hook\n"
        "add-zsh-hook precmd __lb_precmd\n"
        "add-zsh-hook preexec __lb_preexec\n"
        f"ZDOTDIR={shlex.quote(orig)}\n",
        encoding="utf-8",
    )
    return Integration("zsh", list(args), {"ZDOTDIR": tmp}, tmp, has_input_mark=True)


def _fish(args: list[str]) -> Integration:
    tmp = _tmp("fish")
    init = (
        "function __lb_preexec --on-event fish_preexec; printf '\\e]133;C\\a'; end; "
        "function __lb_postexec --on-event fish_postexec; printf '\\e]133;D;%s\\a' $status; end; "
        "function __lb_prompt --on-event fish_prompt; printf '\\e]133;A\\a'; end"
    )
    return Integration("fish", ["--init-command", init, *args], {}, tmp)


def _python(args: list[str]) -> Integration:
    tmp = _tmp("python")
    startup = Path(tmp) / "startup.py"
    startup.write_text(
        "# litbridge: OSC 133 marks around the REPL prompt (the user's own PYTHONSTARTUP runs first)\n"
        "import os as _lb_os, sys as _lb_sys\n"
        "_lb_orig = _lb_os.environ.pop('LITBRIDGE_USER_PYTHONSTARTUP', '')\n"
        "if _lb_orig and _lb_os.path.isfile(_lb_orig):\n"
        "    exec(compile(open(_lb_orig).read(), _lb_orig, 'exec'))\n"
        "# plain strings, no __str__: a Ctrl-C landing while the REPL made a prompt in Python code would be\n"
        "# swallowed there (the REPL clears the error) and the prompt printed empty, without its marks\n"
        "_lb_ps1 = getattr(_lb_sys, 'ps1', None)\n"
        "_lb_ps2 = getattr(_lb_sys, 'ps2', None)\n"
        "# `B` after the prompt's text: a send typed only once the whole prompt is out (a read may split it)\n"
        "_lb_sys.ps1 = ('\\x1b]133;D\\x07\\x1b]133;A\\x07' + (_lb_ps1 if isinstance(_lb_ps1, str) else '>>> ')\n"
        "              + '\\x1b]133;B\\x07')\n"
        "_lb_sys.ps2 = '\\x1b]133;A;k=s\\x07' + (_lb_ps2 if isinstance(_lb_ps2, str) else '... ')\n",
        encoding="utf-8",
    )
    env = {"PYTHONSTARTUP": str(startup)}
    user = os.environ.get("PYTHONSTARTUP")
    if user:
        env["LITBRIDGE_USER_PYTHONSTARTUP"] = user
    return Integration("python", list(args), env, tmp, has_input_mark=True)
