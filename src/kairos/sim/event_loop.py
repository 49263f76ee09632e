"""A discrete-event loop with a stable, documented order of simultaneous events.

Events are ordered by `(time, priority, sequence)`: earlier first, then lower priority value,
then the order in which they were scheduled. The sequence number makes runs reproducible: two
events at the same instant never race, whatever the heap does internally. Cancellation is lazy
(the entry stays in the heap, marked dead) so that cancel is O(1) and the heap never needs
re-sorting.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class EventHandle:
    """A scheduled callback; keep it to cancel the event later."""

    time: float
    priority: int
    seq: int
    callback: Callable[..., Any]
    args: tuple[Any, ...] = field(default=())
    cancelled: bool = False
    fired: bool = False

    @property
    def pending(self) -> bool:
        return not (self.cancelled or self.fired)

    def __lt__(self, other: EventHandle) -> bool:
        return (self.time, self.priority, self.seq) < (other.time, other.priority, other.seq)


class EventLoop:
    """Runs callbacks in simulated time. Time only moves forward."""

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ValueError(f"start time must be finite, got {start}")
        self._now = float(start)
        self._heap: list[EventHandle] = []
        self._seq = 0
        self._live = 0

    @property
    def now(self) -> float:
        return self._now

    @property
    def pending(self) -> int:
        """Number of scheduled events that have neither fired nor been cancelled."""
        return self._live

    def call_at(
        self, time: float, callback: Callable[..., Any], *args: Any, priority: int = 0
    ) -> EventHandle:
        if not math.isfinite(time):
            raise ValueError(f"event time must be finite, got {time}")
        if time < self._now:
            raise ValueError(f"cannot schedule in the past: t={time} < now={self._now}")
        handle = EventHandle(float(time), priority, self._seq, callback, args)
        self._seq += 1
        self._live += 1
        heapq.heappush(self._heap, handle)
        return handle

    def call_after(
        self, delay: float, callback: Callable[..., Any], *args: Any, priority: int = 0
    ) -> EventHandle:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        return self.call_at(self._now + delay, callback, *args, priority=priority)

    def cancel(self, handle: EventHandle) -> bool:
        """Cancel a pending event. Returns False if it already fired or was cancelled."""
        if not handle.pending:
            return False
        handle.cancelled = True
        self._live -= 1
        return True

    def peek_time(self) -> float | None:
        """Time of the next live event, or None when idle."""
        self._drop_dead()
        return self._heap[0].time if self._heap else None

    def step(self) -> bool:
        """Fire the next live event. Returns False when there is none."""
        self._drop_dead()
        if not self._heap:
            return False
        handle = heapq.heappop(self._heap)
        self._now = handle.time
        handle.fired = True
        self._live -= 1
        handle.callback(*handle.args)
        return True

    def run(self, until: float | None = None, max_events: int | None = None) -> int:
        """Fire events in order until idle, or until the next one lies after `until`.

        With `until`, the clock ends exactly at `until` (events at `until` itself fire).
        Returns the number of events fired.
        """
        if until is not None and until < self._now:
            raise ValueError(f"until={until} is before now={self._now}")
        fired = 0
        while max_events is None or fired < max_events:
            nxt = self.peek_time()
            if nxt is None or (until is not None and nxt > until):
                break
            self.step()
            fired += 1
        if until is not None and (max_events is None or fired < max_events):
            self._now = max(self._now, until)
        return fired

    def _drop_dead(self) -> None:
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
