"""Clocks: one protocol, a simulated and a wall-clock implementation.

Policies read time only through the `now` they are handed; runtimes and simulators hand it
from one of these. The wall clock is monotonic and asyncio-friendly (`sleep_until`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

from kairos.sim.event_loop import EventLoop


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the clock's origin."""
        ...


class SimClock:
    """Reads the time of an event loop; it advances only when the loop fires events."""

    def __init__(self, loop: EventLoop) -> None:
        self.loop = loop

    def now(self) -> float:
        return self.loop.now


class WallClock:
    """Monotonic seconds since construction (or since `origin`, a `time.monotonic()` value)."""

    def __init__(self, origin: float | None = None) -> None:
        self.origin = time.monotonic() if origin is None else origin

    def now(self) -> float:
        return time.monotonic() - self.origin

    async def sleep_until(self, t: float) -> None:
        delay = t - self.now()
        if delay > 0:
            await asyncio.sleep(delay)
