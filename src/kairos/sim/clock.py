"""Clocks: one timer service, a simulated and a wall-clock implementation.

Time is in seconds everywhere in kairos; a system whose paper counts in another unit (Orloj's
milliseconds) converts once, in its driver. A clock is a small timer service: `now()`,
`call_at(t, fn, *args)` and `cancel(handle)`. A driver written against it runs unchanged on
simulated time (`SimClock`, over the discrete-event loop) and on the wall clock (`AsyncioClock`,
over a running asyncio loop). Policies read time only through the `now` they are handed.

`AsyncioClock` over a `kairos.sim.virtual.VirtualTimeLoop` runs real asyncio runtime code in
simulated time: that is how a test proves the runtime decides what the simulator decides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kairos.sim.event_loop import EventHandle, EventLoop


@runtime_checkable
class Clock(Protocol):
    """Reads time: seconds since the clock's origin."""

    def now(self) -> float: ...


@runtime_checkable
class Timers(Clock, Protocol):
    """A clock that can also run callbacks at given times (seconds on `now()`'s scale).

    A callback asked for a time already past runs as soon as the clock can. Simultaneous timers
    run in scheduling order on the simulated clock; asyncio does not promise an order among
    timers due at one instant, so a driver must not depend on one.
    """

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> Any: ...

    def cancel(self, handle: Any) -> None: ...

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn` on the clock's thread as soon as it can: how another thread hands work in."""
        ...


class SimClock:
    """The timer service of a discrete-event loop: time moves only when the loop fires events."""

    def __init__(self, loop: EventLoop, priority: int = 0) -> None:
        self.loop = loop
        self.priority = priority  # of the events this clock schedules, among simultaneous ones

    def now(self) -> float:
        return self.loop.now

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> EventHandle:
        return self.loop.call_at(max(t, self.loop.now), fn, *args, priority=self.priority)

    def cancel(self, handle: EventHandle) -> None:
        self.loop.cancel(handle)

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """A simulation has one thread: the callback runs after what is due now."""
        self.loop.call_at(self.loop.now, fn, *args, priority=self.priority)


class AsyncioClock:
    """The timer service of an asyncio loop, on that loop's own clock (monotonic wall time for
    a normal loop, virtual time for a `VirtualTimeLoop`). `origin` is a `loop.time()` value;
    by default the moment of construction. Use it from the loop's thread, except
    `call_soon_threadsafe`, which is how a worker thread hands a result back."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop | None = None, origin: float | None = None
    ) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.origin = self.loop.time() if origin is None else origin

    def now(self) -> float:
        return self.loop.time() - self.origin

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        return self.loop.call_at(self.origin + t, fn, *args)

    def cancel(self, handle: asyncio.TimerHandle) -> None:
        handle.cancel()

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)


class WallClock:
    """Monotonic seconds since construction (or since `origin`, a `time.monotonic()` value):
    the clock a thread that owns no event loop stamps times with. It agrees with an
    `AsyncioClock` over a normal loop given the same origin (asyncio's time is monotonic)."""

    def __init__(self, origin: float | None = None) -> None:
        self.origin = time.monotonic() if origin is None else origin

    def now(self) -> float:
        return time.monotonic() - self.origin

    async def sleep_until(self, t: float) -> None:
        delay = t - self.now()
        if delay > 0:
            await asyncio.sleep(delay)
