"""A small scripted fake TUI for daemon/PTY tests: raw-mode line editor that reports what it reads.

Every non-printable byte it reads is shown on screen as `[hex]` (and every read chunk is appended as hex
to $FAKE_TUI_LOG when set), so tests can check exactly which bytes reached the PTY. Commands typed + Enter:
  reply TEXT     print TEXT after 0.1 s        stream N   print N lines, 50 ms apart
  exit N [S]     "fake stderr bye", exit N (after S s)  env NAME   print NAME=<value> or NAME unset
  flood N [P]    N long lines at full speed (or P lines per 10 ms)  size       print "<rows>x<cols>"         spawn      start a background `sleep 300` (same group)
  anything else  print "echo: <line>"
Ctrl-C prints ^C and a fresh prompt. Flags: --ignore-term (ignore SIGTERM/SIGHUP), --silent-start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import termios
import time
import tty


def out(text: str) -> None:
    os.write(1, text.encode())


def main() -> int:
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    log_path = os.environ.get("FAKE_TUI_LOG")
    old = termios.tcgetattr(0)
    tty.setraw(0)
    children: list[subprocess.Popen[bytes]] = []
    try:
        if "--silent-start" not in sys.argv:
            out("FAKE TUI ready\r\n")
        out("\x1b[?2004h> ")
        line = ""
        while True:
            data = os.read(0, 1024)
            if not data:
                return 0
            if log_path:
                with open(log_path, "a") as f:
                    f.write(data.hex() + "\n")
            text = data.decode("utf-8", "replace")
            i = 0
            while i < len(text):
                ch = text[i]
                i += 1
                if ch == "\r":
                    out("\r\n")
                    code = run(line.strip(), children)
                    if code is not None:
                        os.write(2, b"fake stderr bye\n")
                        return code
                    line = ""
                    out("> ")
                elif ch == "\x03":
                    out("^C\r\n> ")
                    line = ""
                elif ch == "\x7f":
                    if line:
                        line = line[:-1]
                        out("\b \b")
                elif ch.isprintable():
                    line += ch
                    out(ch)
                else:
                    out(f"[{ch.encode().hex()}]")
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, old)


def run(cmd: str, children: list[subprocess.Popen[bytes]]) -> int | None:
    word, _, rest = cmd.partition(" ")
    if word == "reply":
        time.sleep(0.1)
        out(rest + "\r\n")
    elif word == "stream":
        for n in range(int(rest or "3")):
            out(f"line {n}\r\n")
            time.sleep(0.05)
    elif word == "flood":  # N long lines as fast as possible (or P per 10 ms), then "flood done"
        count, _, pace = rest.partition(" ")
        for n in range(int(count or "1000")):
            out(f"flood {n} " + "x" * 150 + "\r\n")
            if pace and n % int(pace) == 0:
                time.sleep(0.01)
        out("flood done\r\n")
    elif word == "exit":  # exit N [delay seconds]
        code, _, delay = rest.partition(" ")
        time.sleep(float(delay or 0))
        return int(code or "0")
    elif word == "env":
        value = os.environ.get(rest)
        out(f"{rest}={value}\r\n" if value is not None else f"{rest} unset\r\n")
    elif word == "size":
        size = os.get_terminal_size(0)
        out(f"{size.lines}x{size.columns}\r\n")
    elif word == "spawn":
        children.append(subprocess.Popen(["sleep", "300"]))
        out(f"child {children[-1].pid}\r\n")
    elif cmd:
        out(f"echo: {cmd}\r\n")
    return None


if __name__ == "__main__":
    sys.exit(main())
