"""The virtual-time loop (`litbridge.vclock`): timers jump, and with nothing scheduled it waits on its fds."""

from __future__ import annotations

import asyncio
import threading

from litbridge.vclock import VirtualTimeLoop


def test_timers_jump_in_order_without_sleeping() -> None:
    loop = VirtualTimeLoop()
    fired: list[tuple[str, float]] = []
    try:
        loop.call_later(30.0, lambda: fired.append(("b", loop.time())))
        loop.call_later(5.0, lambda: fired.append(("a", loop.time())))
        loop.run_until_complete(asyncio.sleep(60.0))
    finally:
        loop.close()
    assert [n for n, _ in fired] == ["a", "b"]
    assert 5.0 <= fired[0][1] < fired[1][1] and fired[1][1] >= 30.0


def test_with_no_timer_it_blocks_on_its_fds_instead_of_spinning() -> None:
    """Waiting for a thread (no timer pending): the loop must sleep in select(None), not re-poll select(0)."""
    loop = VirtualTimeLoop()
    calls = 0
    real = loop._fast.select

    def counting(timeout: float | None = None):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(timeout)

    loop._fast.select = counting  # type: ignore[method-assign]
    try:
        fut = loop.create_future()
        t = threading.Timer(0.3, lambda: loop.call_soon_threadsafe(fut.set_result, "done"))
        t.start()
        assert loop.run_until_complete(fut) == "done"
        t.join()
    finally:
        loop.close()
    assert calls < 20, f"{calls} select calls while waiting 0.3 s for a thread: the loop spun"
