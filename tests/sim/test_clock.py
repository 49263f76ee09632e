from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.sim import (
    AsyncioClock,
    EventLoop,
    SimClock,
    Timers,
    VirtualTimeError,
    VirtualTimeLoop,
    WallClock,
    run_virtual,
)


def _program(clock: Timers, delays: list[float], log: list[tuple[float, int]]) -> None:
    """Schedules a chain of timers (some cancelled, some rescheduling) on any clock."""
    handles: list[Any] = []

    def fire(i: int) -> None:
        log.append((clock.now(), i))
        if i % 3 == 0 and i + 100 < 400:
            clock.call_at(clock.now() + delays[i % len(delays)], fire, i + 100)

    for i, d in enumerate(delays):
        handles.append(clock.call_at(d * (i + 1), fire, i))
    for h in handles[1::4]:
        clock.cancel(h)


@given(st.lists(st.floats(0.001, 5.0), min_size=1, max_size=30, unique=True))
def test_simulated_and_virtual_asyncio_clocks_fire_the_same_timers_at_the_same_times(
    delays: list[float],
) -> None:
    loop = EventLoop()
    sim_log: list[tuple[float, int]] = []
    _program(SimClock(loop), delays, sim_log)
    loop.run()

    async def main() -> list[tuple[float, int]]:
        log: list[tuple[float, int]] = []
        _program(AsyncioClock(), delays, log)
        while len(asyncio.get_running_loop()._scheduled) > 0:  # type: ignore[attr-defined]
            await asyncio.sleep(0.5)
        return log

    virtual_log = run_virtual(main())
    assert sorted(virtual_log) == sorted(sim_log)
    assert len(sim_log) >= len(delays) - (len(delays) + 2) // 4


def test_a_timer_reads_exactly_the_time_it_was_scheduled_for_in_virtual_time() -> None:
    async def main() -> list[float]:
        clock = AsyncioClock()
        seen: list[float] = []
        for t in (0.1, 0.35, 7.3, 1e4 + 0.1):
            clock.call_at(t, lambda: seen.append(clock.now()))
        await asyncio.sleep(2e4)
        return seen

    assert run_virtual(main()) == [0.1, 0.35, 7.3, 1e4 + 0.1]


def test_virtual_time_takes_no_wall_time_and_real_io_still_works() -> None:
    async def main() -> tuple[float, bytes]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.sleep(3600.0)
        reader, writer = await asyncio.open_connection(*server_addr)
        writer.write(b"ping\n")
        line = await reader.readline()
        writer.close()
        return loop.time() - t0, line

    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write(await r.readline())
        await w.drain()
        w.close()

    loop = VirtualTimeLoop()
    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0))
    server_addr = server.sockets[0].getsockname()[:2]
    wall = time.monotonic()
    try:
        elapsed, line = loop.run_until_complete(main())
    finally:
        server.close()
        loop.run_until_complete(server.wait_closed())
        loop.close()
    assert elapsed >= 3600.0 and line == b"ping\n"
    assert time.monotonic() - wall < 60.0  # an hour of virtual time, far less than an hour


def test_an_idle_virtual_loop_says_so_instead_of_hanging() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()  # nothing will ever resolve it

    with pytest.raises(VirtualTimeError):
        run_virtual(main())


def test_a_cancelled_timer_never_fires_on_either_clock() -> None:
    loop = EventLoop()
    fired: list[str] = []
    sim = SimClock(loop)
    sim.cancel(sim.call_at(1.0, fired.append, "sim"))
    sim.call_at(2.0, fired.append, "sim-kept")
    loop.run()

    async def main() -> None:
        clock = AsyncioClock()
        clock.cancel(clock.call_at(1.0, fired.append, "asyncio"))
        clock.call_at(2.0, fired.append, "asyncio-kept")
        await asyncio.sleep(3.0)

    run_virtual(main())
    assert fired == ["sim-kept", "asyncio-kept"]


def test_a_past_time_runs_now_not_in_the_past() -> None:
    loop = EventLoop()
    sim = SimClock(loop)
    seen: list[float] = []
    loop.call_at(5.0, lambda: sim.call_at(1.0, lambda: seen.append(sim.now())))
    loop.run()
    assert seen == [5.0]


def test_wall_clock_and_asyncio_clock_agree_on_a_shared_origin() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        wall = WallClock()
        aio = AsyncioClock(loop, origin=wall.origin)
        a = wall.now()
        b = aio.now()
        c = wall.now()
        assert a <= b + 1e-3 and b <= c + 1e-3
        target = aio.now() + 0.05
        done = loop.create_future()
        aio.call_at(target, done.set_result, None)
        await done
        return wall.now() - target

    assert asyncio.run(main()) >= -1e-3  # a timer never fires before its time on the wall clock


def test_wall_clock_sleep_until_waits_at_least_until_the_target() -> None:
    clock = WallClock()

    async def go() -> float:
        target = clock.now() + 0.05
        await clock.sleep_until(target)
        return clock.now() - target

    assert asyncio.run(go()) >= 0.0


def test_timers_an_ulp_apart_fire_at_their_own_times_in_virtual_time() -> None:
    # asyncio fires timers within its clock resolution together; virtual time must not
    async def main() -> list[float]:
        clock = AsyncioClock()
        seen: list[float] = []
        for t in (1.9999999999999991, 2.0, 1e4, 1e4 + 2e-12):
            clock.call_at(t, lambda: seen.append(clock.now()))
        await asyncio.sleep(2e4)
        return seen

    assert run_virtual(main()) == [1.9999999999999991, 2.0, 1e4, 1e4 + 2e-12]
