"""The generic driver: any TUI or REPL (bash, python3, ...) driven by output quiescence.

State is `responding` while output changes and `idle` after a quiescence window (default 0.8 s; the
`create` field `quiescence` overrides it). A send types the text + Enter; `replace` is the text that
appeared on screen since the send (minus the echoed input line and the returning prompt); `complete`
fires at quiescence with source "screen". Knows no CLI specifics; timers are only the quiescence check.
"""

from __future__ import annotations

import asyncio
from typing import Any

from litbridge.drivers.base import Driver, LaunchSpec

DEFAULT_QUIET = 0.8
STARTUP_MAX = 30.0
SILENT_START = 3.0  # a program that prints nothing at all is taken as ready after this long


class GenericDriver(Driver):
    name = "generic"

    def __init__(self, host: Any, options: dict[str, Any]) -> None:
        super().__init__(host, options)
        try:
            self.quiet = max(0.05, float(options.get("quiescence", DEFAULT_QUIET)))
        except (TypeError, ValueError):
            self.quiet = DEFAULT_QUIET
        self.settle = min(self.quiet, DEFAULT_QUIET)  # startup: the first settle needs no long window
        self._timer: asyncio.TimerHandle | None = None
        self._settled: asyncio.Future[None] | None = None
        self._quiet_from = 0.0  # quiescence is measured from max(last output, this)
        self._baseline: list[str] = []
        self._prompt = ""
        self._sent = ""

    # -- launch / startup ----------------------------------------------------------------------------
    def launch(self) -> LaunchSpec:
        argv = [self.options.get("cli") or "sh", *self.options.get("args", [])]
        if self.options.get("model"):
            argv += ["--model", self.options["model"]]
        return LaunchSpec(argv=argv)

    async def startup(self) -> dict[str, Any]:
        """Ready when the screen first settles: some output, then none for the quiescence window (or no
        output at all for SILENT_START seconds, for programs such as `cat`)."""
        self._settled = self.host.loop.create_future()
        self._quiet_from = self.host.loop.time()
        self._arm()
        try:
            await asyncio.wait_for(asyncio.shield(self._settled), STARTUP_MAX)
        except asyncio.TimeoutError:
            self.host.log.info("screen never settled within %.0fs; ready anyway", STARTUP_MAX)
        self.host.set_state("idle")
        return {"model": self.options.get("model"), "resumed": False}

    # -- events --------------------------------------------------------------------------------------
    def on_output(self, data: bytes) -> None:
        self._arm()

    def on_screen(self, changed_rows: list[tuple[int, str]]) -> None:
        if self._settled is None or not self._settled.done():
            return
        if self.host.turn_id is not None:
            self.host.set_state("responding")
            self.host.turn_text(self._response())
        elif self.host.state == "idle":
            self.host.set_state("responding")

    def _arm(self) -> None:
        if self._timer is None:
            settled = self._settled is not None and self._settled.done()
            self._timer = self.host.call_later(self.quiet if settled else self.settle, self._check)

    def _check(self) -> None:
        self._timer = None
        window = self.quiet if self._settled is not None and self._settled.done() else self.settle
        quiet_for = self.host.loop.time() - max(self.host.last_output_at, self._quiet_from)
        if quiet_for < window:
            self._timer = self.host.call_later(window - quiet_for, self._check)
            return
        if self._settled is not None and not self._settled.done():
            silent_for = self.host.loop.time() - self.host.spawned_at
            if self.host.last_output_at == 0.0 and silent_for < SILENT_START:
                # nothing printed yet: a slow starter (an interpreter on a loaded box) is not "settled"
                self._timer = self.host.call_later(min(self.quiet, SILENT_START - silent_for), self._check)
                return
            self._settled.set_result(None)
            return
        if self.host.turn_id is not None:
            self.host.turn_complete(self._response(), None, "screen")
        self.host.set_state("idle")

    # -- input ---------------------------------------------------------------------------------------
    def can_accept_input(self) -> bool:
        return self._settled is not None and self._settled.done()

    async def submit(self, text: str) -> None:
        rows, y = self._rows()
        self._baseline = rows[: y + 1]
        self._prompt = rows[y] if y < len(rows) else ""
        self._sent = text
        self._quiet_from = self.host.loop.time()
        self.host.write(text.encode("utf-8") + b"\r")
        self._arm()

    def interrupt(self) -> None:
        """Ctrl-C (REPLs and shells understand it; Esc would do nothing there); the turn ends now."""
        self.host.write(b"\x03")
        self.host.turn_interrupted(self._response())

    def info(self) -> dict[str, Any]:
        return {"model": self.options.get("model"), "quiescence": self.quiet}

    # -- response extraction -------------------------------------------------------------------------
    def _rows(self) -> tuple[list[str], int]:
        term = self.host.terminal
        rows = [r.rstrip() for r in term.display]
        _, y, _ = term.cursor
        last = max((i for i, r in enumerate(rows) if r), default=0)
        return rows[: max(y, last) + 1], y

    def _response(self) -> str:
        """Screen text that appeared since the send, aligned against the pre-send rows (handles scroll)."""
        current, _ = self._rows()
        base = self._baseline
        history = base[:-1]  # rows above the prompt line at send time
        start = 0
        for k in range(len(history) + 1):
            kept = history[k:]
            if current[: len(kept)] == kept:
                start = len(kept)
                break
        new = current[start:]
        first = self._sent.splitlines()[0].strip() if self._sent.strip() else ""
        prompt = self._prompt.strip()
        if new and ((prompt and new[0].strip().startswith(prompt)) or (first and first in new[0])):
            new = new[1:]  # the prompt line with the echoed input
        if new and prompt and new[-1].strip() == prompt:
            new = new[:-1]
        while new and not new[-1].strip():
            new.pop()
        while new and not new[0].strip():
            new.pop(0)
        return "\n".join(new)
