from __future__ import annotations

import asyncio

from kairos.sim import Clock, EventLoop, SimClock, WallClock


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(SimClock(EventLoop()), Clock)
    assert isinstance(WallClock(), Clock)


def test_wall_clock_sleep_until_waits_at_least_until_the_target() -> None:
    clock = WallClock()

    async def go() -> float:
        target = clock.now() + 0.05
        await clock.sleep_until(target)
        return clock.now() - target

    assert asyncio.run(go()) >= 0.0
    assert clock.now() > 0.0
