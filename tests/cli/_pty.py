"""Reading a ptyprocess child in the CLI tests: until a needle appears, and until it exits.

Shared by test_attach, test_render and test_send_tty; it only reads and waits, the tests spawn and assert.
"""

from __future__ import annotations

import os
import select
import time

from ptyprocess import PtyProcess


def _read_chunk(proc: PtyProcess) -> bytes:
    """One read; b"" on EOF (Linux reports a closed pty as EIO)."""
    try:
        return os.read(proc.fd, 65536)
    except OSError:
        return b""


def read_until(proc: PtyProcess, buf: bytearray, needle: bytes, timeout: float = 60.0) -> bytes:
    """Append to `buf` until `needle` is in it (fail on EOF / timeout); return what this call added."""
    start = len(buf)
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not seen within {timeout}s; got {bytes(buf[-2000:])!r}"
        ready, _, _ = select.select([proc.fd], [], [], min(left, 0.5))
        if ready:
            chunk = _read_chunk(proc)
            assert chunk, f"EOF before {needle!r}; got {bytes(buf[-2000:])!r}"
            buf += chunk
    return bytes(buf[start:])


def finish(proc: PtyProcess, buf: bytearray, timeout: float = 60.0) -> int:
    """Drain into `buf` until EOF and wait for the exit: the exit code, or -signal if killed.

    Kills the child and fails if it is still running after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.fd], [], [], 0.2)
        if ready:
            chunk = _read_chunk(proc)
            if not chunk:
                break
            buf += chunk
        elif not proc.isalive():
            break
    while proc.isalive() and time.monotonic() < deadline:  # EOF comes a moment before the exit
        time.sleep(0.05)
    if proc.isalive():
        proc.terminate(force=True)
        raise AssertionError(f"still running after {timeout}s; got {bytes(buf[-1500:])!r}")
    proc.wait()
    return proc.exitstatus if proc.exitstatus is not None else -(proc.signalstatus or 0)
