"""An asyncio event loop in virtual time, so real runtime code can run in simulated time.

The loop's `time()` is a number that moves only when the loop would otherwise sleep: when no
callback is ready, it jumps straight to the next timer instead of waiting for it. Sockets and
pipes still work (they are polled without blocking), so the loop runs any asyncio code; what
changes is that `asyncio.sleep(60)` and `loop.call_at(t, ...)` take no wall time.

This is the test harness that lets a runtime (its driver, its asyncio plumbing) be run against
the simulator on one seed and be checked to make identical decisions. Threads that hand work
back with `call_soon_threadsafe` are not waited for: a virtual-time run uses simulated workers.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from typing import Any


class VirtualTimeError(RuntimeError):
    """The loop has nothing to run, no timer to jump to, and nothing to wait for."""


class _JumpingSelector(selectors.BaseSelector):
    """Polls the real selector without blocking; where asyncio would block, time jumps."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._real = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise VirtualTimeError("the virtual-time loop is idle: no callback, no timer")
        self._loop._jump(timeout)
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """`asyncio.SelectorEventLoop` whose clock starts at `start` and jumps between timers."""

    def __init__(self, start: float = 0.0) -> None:
        self._virtual_now = float(start)
        super().__init__(selector=_JumpingSelector(self))
        self._clock_resolution = math.ulp(self._virtual_now)

    def time(self) -> float:
        return self._virtual_now

    def _jump(self, timeout: float) -> None:
        # Land exactly on the next timer's time (adding `timeout` may round away from it), so
        # a callback reads the very time it was scheduled for, as on the discrete-event loop.
        scheduled: list[asyncio.TimerHandle] = getattr(self, "_scheduled", [])
        target = scheduled[0].when() if scheduled else self._virtual_now + timeout
        self._virtual_now = max(self._virtual_now, target)
        # asyncio fires every timer due within its clock's resolution at once (early, for a
        # wall clock that cannot tell them apart); a virtual clock can: one ulp apart is apart
        self._clock_resolution = math.ulp(self._virtual_now)


def run_virtual(main: Any, start: float = 0.0) -> Any:
    """Run a coroutine to completion on a fresh virtual-time loop; its result."""
    loop = VirtualTimeLoop(start)
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()
