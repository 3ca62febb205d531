"""Misbehaving fake CLIs for the hardening suite (tests/hardening/), chosen by the first argument.

  never-ready [--ignore-term]   paint a busy line every 0.2 s forever, never a prompt; ignores input
                                (optionally SIGTERM/SIGHUP too, so only SIGKILL ends it)
  flood N                       write N lines of 100 bytes as fast as possible, then idle until EOF
Extra arguments (e.g. the `--session-id` a driver adds) are ignored. Used behind a `claude` shell wrapper
to exercise the Claude driver's startup timeout. Knows nothing of litbridge.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else "never-ready"
    if "--ignore-term" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if mode == "never-ready":
        n = 0
        while True:
            os.write(1, f"\r\x1b[Kstarting up… {n}".encode())
            n += 1
            time.sleep(0.2)
    if mode == "flood":
        count = int(argv[2]) if len(argv) > 2 else 10000
        line = b"x" * 98 + b"\r\n"
        for _ in range(count):
            os.write(1, line)
        while os.read(0, 1024):
            pass
        return 0
    print(f"fake_hardening: unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
