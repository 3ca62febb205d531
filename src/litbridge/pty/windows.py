"""Windows PTY host over pywinpty (ConPTY): a reader thread per child, since ConPTY has no selectable fd.

Same interface as the Unix host. Untested on this CI image (Linux); kept minimal on purpose.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading

from litbridge.protocol.spec import GRID
from litbridge.pty.base import ChildProcess, SpawnError


class WinPty(ChildProcess):  # pragma: no cover - Windows only
    transport = "pty"

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        columns: int = GRID[0],
        lines: int = GRID[1],
    ) -> None:
        super().__init__()
        try:
            from winpty import PtyProcess  # type: ignore[import-not-found]

            self._proc = PtyProcess.spawn(
                subprocess.list2cmdline(argv), cwd=cwd, env=env, dimensions=(lines, columns)
            )
        except Exception as exc:
            raise SpawnError(f"spawn failed: {exc}") from exc
        self.pid = self._proc.pid
        self.pgid = self.pid

    def _start_io(self) -> None:
        loop = self.loop
        assert loop is not None

        def reader() -> None:
            while True:
                try:
                    data = self._proc.read(65536)
                except EOFError:
                    break
                except Exception:
                    break
                if data:
                    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
                    loop.call_soon_threadsafe(self._on_output, raw)
            code = None
            with contextlib.suppress(Exception):
                self._proc.wait()
                code = self._proc.exitstatus
            loop.call_soon_threadsafe(self._reaped, code)

        threading.Thread(target=reader, name=f"winpty-{self.pid}", daemon=True).start()

    def _start_watch(self) -> None:
        pass  # the reader thread reports the exit

    def write(self, data: bytes) -> None:
        if not self.exited:
            with contextlib.suppress(Exception):
                self._proc.write(data.decode("utf-8", "replace"))

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(Exception):
            self._proc.terminate(force=sig != 15)

    def _close_io(self) -> None:
        with contextlib.suppress(Exception):
            self._proc.close(force=True)
