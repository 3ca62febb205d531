"""A fake CLI that draws one saved screen (a capture's `screens/*.txt`) and waits: for start-up dialog tests.

`--version` prints `$FAKE_SCREEN_VERSION` (default `2.1.0`) and exits, as the real CLIs do. Otherwise it paints
the screen named by `$FAKE_SCREEN` (its `# t=...` header line left out) in raw mode and reads keys; with
`$FAKE_SCREEN_ON_KEY=exit` the first key makes it exit with status 7 (a CLI that dies while a dialog is being
answered), else it keeps the screen up until stdin closes. Standard library only.
"""

from __future__ import annotations

import os
import sys
import termios
import tty


def main() -> int:
    if sys.argv[1:2] == ["--version"]:
        print(os.environ.get("FAKE_SCREEN_VERSION", "2.1.0"))
        return 0
    with open(os.environ["FAKE_SCREEN"], encoding="utf-8") as f:
        rows = [r.rstrip("\n") for r in f if not r.startswith("# t=")]
    old = termios.tcgetattr(0)
    tty.setraw(0)
    try:
        os.write(1, b"\x1b[2J\x1b[H" + "\r\n".join(rows).encode())
        while True:
            data = os.read(0, 1024)
            if not data:
                return 0
            if os.environ.get("FAKE_SCREEN_ON_KEY") == "exit":
                return 7
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, old)


if __name__ == "__main__":
    sys.exit(main())
