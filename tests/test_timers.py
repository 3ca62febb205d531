"""`litbridge.timers`: many deadlines on one loop timer, fired as `loop.call_later` would fire them."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from litbridge.timers import Timer, Timers


async def _settle(seconds: float = 0.08) -> None:
    await asyncio.sleep(seconds)


def test_timers_fire_in_deadline_order_and_equal_deadlines_in_arming_order() -> None:
    async def main() -> list[str]:
        timers = Timers.for_loop(asyncio.get_running_loop())
        fired: list[str] = []
        now = asyncio.get_running_loop().time()
        # c well after b: b's delay counts from when it is armed, which a busy machine can make a few ms later
        timers.call_at(now + 0.2, lambda: fired.append("c"))
        timers.call_at(now + 0.01, lambda: fired.append("a1"))
        timers.call_at(now + 0.01, lambda: fired.append("a2"))
        timers.call_later(0.02, lambda: fired.append("b"))
        await _settle(0.3)
        return fired

    assert asyncio.run(main()) == ["a1", "a2", "b", "c"]


def test_a_thousand_timers_hold_one_loop_timer() -> None:
    async def main() -> tuple[int, int, int]:
        loop = asyncio.get_running_loop()
        timers = Timers.for_loop(loop)
        fired = []
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        for i in range(1000):
            timers.call_later(0.01 + i * 1e-5, lambda i=i: fired.append(i))
        during = len(loop._scheduled)  # type: ignore[attr-defined]
        await _settle()
        return before, during, len(fired)

    before, during, fired = asyncio.run(main())
    assert during - before == 1
    assert fired == 1000


def test_a_cancelled_timer_never_fires_and_cancelling_a_fired_one_is_harmless() -> None:
    async def main() -> list[str]:
        timers = Timers.for_loop(asyncio.get_running_loop())
        fired: list[str] = []
        gone = timers.call_later(0.01, lambda: fired.append("gone"))
        kept = timers.call_later(0.01, lambda: fired.append("kept"))
        gone.cancel()
        assert gone.cancelled() and not kept.cancelled()
        await _settle()
        kept.cancel()
        gone.cancel()
        return fired

    assert asyncio.run(main()) == ["kept"]


def test_a_timer_is_in_its_owners_set_until_it_fires_or_is_cancelled() -> None:
    """A session cancels what is in its set when its CLI dies: the pending timers, and no fired or cancelled one
    kept on (they went from a list only now and then, so a session at work held dozens)."""

    async def main() -> None:
        timers = Timers.for_loop(asyncio.get_running_loop())
        owner: set[Timer] = set()
        fired: list[str] = []
        inside: list[bool] = []
        fires = timers.call_later(0.01, lambda: inside.append(fires in owner), owner)
        dropped = timers.call_later(0.01, lambda: fired.append("dropped"), owner)
        pending = timers.call_later(30, lambda: fired.append("pending"), owner)
        assert len(owner) == 3
        dropped.cancel()
        assert owner == {fires, pending}
        await _settle()
        assert owner == {pending}
        assert inside == [False]  # out of the set before its callback runs (a callback may re-arm it)
        pending.cancel()
        assert not owner and fired == []

    asyncio.run(main())


def test_a_timer_armed_by_a_callback_runs_on_a_later_turn_of_the_loop() -> None:
    """A callback that re-arms itself at no delay must not spin inside one batch (`loop.call_later(0)` runs at
    the next turn of the loop, after what is ready by then)."""

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        timers = Timers.for_loop(loop)
        seen: list[str] = []
        count = 0

        def again() -> None:
            nonlocal count
            count += 1
            seen.append(f"timer {count}")
            loop.call_soon(seen.append, f"soon {count}")
            if count < 3:
                timers.call_later(0, again)

        timers.call_later(0.01, again)
        await _settle()
        return seen

    assert asyncio.run(main()) == ["timer 1", "soon 1", "timer 2", "soon 2", "timer 3", "soon 3"]


def test_a_callback_that_raises_is_logged_and_the_rest_still_fire(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[str]:
        timers = Timers.for_loop(asyncio.get_running_loop())
        fired: list[str] = []

        def boom() -> None:
            raise RuntimeError("boom")

        timers.call_later(0.01, boom)
        timers.call_later(0.01, lambda: fired.append("after"))
        timers.call_later(0.02, lambda: fired.append("later"))
        await _settle()
        return fired

    with caplog.at_level(logging.ERROR, logger="litbridge.timers"):
        assert asyncio.run(main()) == ["after", "later"]
    assert any("boom" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_an_earlier_deadline_rearms_the_loop_timer() -> None:
    async def main() -> list[str]:
        timers = Timers.for_loop(asyncio.get_running_loop())
        fired: list[str] = []
        timers.call_later(5.0, lambda: fired.append("late"))
        timers.call_later(0.01, lambda: fired.append("early"))
        await _settle()
        return fired

    assert asyncio.run(main()) == ["early"]


def test_each_loop_has_its_own_timers() -> None:
    a, b = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        assert Timers.for_loop(a) is Timers.for_loop(a)
        assert Timers.for_loop(a) is not Timers.for_loop(b)
    finally:
        a.close()
        b.close()
    with pytest.raises(RuntimeError):
        Timers.for_loop(a)


def test_deadlines_in_one_grid_slot_fire_together_at_its_end_in_deadline_order() -> None:
    """The loop wakes once per slot of the shared grid: timers due within one slot fire in one batch at the
    slot's end (up to GRID late), still in deadline order; a later slot's timer waits for its own end."""
    from litbridge import timers as timers_mod

    grid = timers_mod.GRID

    async def main() -> tuple[list[tuple[str, int, float]], float]:
        loop = asyncio.get_running_loop()
        timers = Timers.for_loop(loop)
        fired: list[tuple[str, int, float]] = []
        batch = 0
        fire = timers._fire

        def counting_fire() -> None:
            nonlocal batch
            batch += 1
            fire()

        timers._fire = counting_fire  # type: ignore[method-assign]
        start = (math.ceil(loop.time() / grid) + 1) * grid  # a slot boundary ahead of us
        for name, at in (("b", 0.015), ("a", 0.002), ("c", 0.008), ("next slot", grid + 0.004)):
            timers.call_at(start + at, lambda name=name: fired.append((name, batch, loop.time())))
        await asyncio.sleep(start + 3 * grid - loop.time())
        return fired, start

    fired, start = asyncio.run(main())
    assert [name for name, _, _ in fired] == ["a", "c", "b", "next slot"]
    first = {b for name, b, _ in fired if name != "next slot"}
    # one wake-up for the slot's three deadlines (a busy machine may add the next slot's)
    assert len(first) == 1
    resolution = 0.002  # the loop's own clock: a timer may run up to its resolution early
    assert all(at >= start + grid - resolution for name, _, at in fired if name != "next slot")
    _, nxt_batch, nxt_at = fired[-1]
    assert nxt_at >= start + grid + 0.004 - resolution  # never before its own deadline
    # it waited for its slot's end, unless the loop woke so late for the first slot that it was due by then
    assert nxt_at >= start + 2 * grid - resolution or nxt_batch in first


def test_without_a_grid_the_loop_timer_is_armed_at_the_deadline_itself() -> None:
    async def main() -> tuple[float, list[float]]:
        loop = asyncio.get_running_loop()
        exact, gridded = Timers(loop, grid=0), Timers(loop, grid=0.02)
        deadline = loop.time() + 0.0031
        exact.call_at(deadline, lambda: None)
        gridded.call_at(deadline, lambda: None)
        armed = [exact._armed_at, gridded._armed_at]
        await asyncio.sleep(0.05)  # both fired: nothing is left armed
        return deadline, [*armed, exact._armed_at, gridded._armed_at]

    deadline, (exact_at, gridded_at, exact_after, gridded_after) = asyncio.run(main())
    assert exact_at == deadline
    assert deadline <= gridded_at < deadline + 0.02
    assert abs(gridded_at / 0.02 - round(gridded_at / 0.02)) < 1e-6  # a slot's end
    assert exact_after == gridded_after == math.inf
