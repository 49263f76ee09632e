"""The lanes' threads: iterations within a lane are serialized, lanes run concurrently.

Each lane has one thread (a single-worker executor): an iteration handed to a lane runs there
and its result is delivered through `deliver`, which the service points at its event loop
(`call_soon_threadsafe`), so the driver and the policy only ever run on the loop's thread.

A switch between two resident jobs on a lane is nothing: the next job's iteration simply starts
(spec 2.4). With `switch="suspend"` the lane instead behaves like Gandiva's suspend/resume: the
job that ran last is swapped out to host memory and the next one swapped in before it runs, so
the two kinds of switch are measured side by side in the same harness. Each run records the
gap since the lane's previous iteration ended when the job changed: the switch latency of
spec 4.5, including the decision and the thread hand-offs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from kairos.salus.runtime.session import JobFailed, Session
from kairos.salus.runtime.suspend import Swapped

SwitchMode = Literal["resident", "suspend"]


@dataclass(frozen=True)
class IterationRun:
    """One iteration as it ran: times on the service's clock (seconds), the measured duration
    (CUDA events on a GPU), the switch that preceded it, or the error that failed the job."""

    job: int
    lane: int
    start: float
    end: float
    duration: float
    switched_from: int | None = None  # the lane's previous job, when it was another one
    switch_gap: float | None = None  # previous iteration's end -> this one's start (seconds)
    swap_s: float = 0.0  # time spent suspending/resuming state (suspend mode only)
    moved_bytes: int = 0  # the job's state bytes not at their set-up addresses (on a switch)
    error: str | None = None


Delivery = Callable[[IterationRun], None]


class LaneThreads:
    """Runs `sessions[job]`'s iterations on per-lane threads; `now` is the service's clock."""

    def __init__(
        self,
        sessions: Mapping[int, Session],
        deliver: Delivery,
        now: Callable[[], float] = time.monotonic,
        switch: SwitchMode = "resident",
    ) -> None:
        self.sessions = sessions
        self.deliver = deliver
        self.now = now
        self.switch = switch
        self._threads: dict[int, ThreadPoolExecutor] = {}
        # lane -> (job, perf_counter at the end of its iteration)
        self._last: dict[int, tuple[int, float]] = {}
        self._swapped: dict[int, Swapped] = {}
        self._closed = False

    def _thread(self, lane: int) -> ThreadPoolExecutor:
        if lane not in self._threads:
            self._threads[lane] = ThreadPoolExecutor(1, thread_name_prefix=f"salus-lane{lane}")
        return self._threads[lane]

    @property
    def threads(self) -> int:
        """Lane threads alive: one per lane the driver has not deleted."""
        return len(self._threads)

    def launch(self, job: int, lane: int, lane_bytes: int) -> Future[None]:
        """Run one iteration of `job` on `lane`; its `IterationRun` goes to `deliver`."""
        if self._closed:
            raise RuntimeError("the lanes are stopped")
        return self._thread(lane).submit(self._run, job, lane, lane_bytes)

    def submit(self, lane: int, fn: Callable[[], Any]) -> Future[Any]:
        """Run `fn` on `lane`'s thread (set-up work that must not overlap its iterations)."""
        return self._thread(lane).submit(fn)

    def _run(self, job: int, lane: int, lane_bytes: int) -> None:
        prev = self._last.get(lane)
        switched = prev is not None and prev[0] != job
        swap_s = self._swap(job, prev[0] if prev else None) if self.switch == "suspend" else 0.0
        start = self.now()  # the iteration starts once its state is in place
        started = time.perf_counter()  # the gap's clock: the loop's time may be coarse (uvloop)
        error: str | None = None
        duration = 0.0
        moved = 0
        try:
            session = self.sessions[job]
            if switched:  # checked off the clock: the next iteration has already started
                moved = session.moved_bytes()
            duration = session.iterate(lane, lane_bytes)
        except JobFailed as exc:
            error = str(exc)
        except Exception as exc:  # a bug of ours must fail the job, not the lane thread
            error = f"the service failed running the job: {type(exc).__name__}: {exc}"
        end = self.now()
        self._last[lane] = (job, time.perf_counter())
        self.deliver(
            IterationRun(
                job,
                lane,
                start,
                end,
                duration,
                switched_from=prev[0] if switched and prev else None,
                switch_gap=started - prev[1] if switched and prev else None,
                swap_s=swap_s,
                moved_bytes=moved,
                error=error,
            )
        )

    def _swap(self, job: int, previous: int | None) -> float:
        """Suspend the lane's previous job and resume `job` (suspend mode); seconds taken."""
        t0 = time.perf_counter()
        if previous is not None and previous != job and previous in self.sessions:
            parts = self.sessions[previous].parts
            if parts is not None and previous not in self._swapped:
                swapped = Swapped(parts)
                swapped.suspend()
                self._swapped[previous] = swapped
        mine = self._swapped.pop(job, None)
        if mine is not None:
            mine.resume()
        return time.perf_counter() - t0

    def forget(self, job: int) -> None:
        """A job ended: drop its swapped-out copy, if any."""
        self._swapped.pop(job, None)

    def drop_lane(self, lane: int) -> None:
        """The lane was deleted: its thread ends once its last iteration has run."""
        thread = self._threads.pop(lane, None)
        self._last.pop(lane, None)
        if thread is not None:
            thread.shutdown(wait=False)

    def stop(self) -> None:
        """Stop every lane thread after its running iteration."""
        self._closed = True
        # a copy: stop runs off the loop, where the driver may still drop a lane meanwhile
        for thread in list(self._threads.values()):
            thread.shutdown(wait=True, cancel_futures=True)
        self._threads.clear()
