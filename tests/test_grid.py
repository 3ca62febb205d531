"""The session grid is defined once (`protocol.spec.GRID`): the PTY hosts and both terminal implementations take
their default size from it, so changing it there changes every one of them."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import inspect
import litbridge.protocol.spec as spec
spec.GRID = (123, 45)  # before the modules below read it
from litbridge import term
from litbridge.pty import unix, windows
for cls in (unix.UnixPty, windows.WinPty, term.PyteTerminal, term.NativeTerminal):
    p = inspect.signature(cls.__init__).parameters
    got = (p["columns"].default, p["lines"].default)
    assert got == (123, 45), (cls.__name__, got)
"""


def test_default_sizes_come_from_the_one_grid() -> None:
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
