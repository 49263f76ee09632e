"""The iteration loop of an Andes engine, written once over a clock and a worker.

Every iteration the scheduler decides (`schedule(now)`), the worker carries the decision out,
and the scheduler records what happened (`update_from_output(out, now, stopped)`) when the
iteration ends; the next decision is made at that same instant, under the same hold of the
lock, so a request added from another thread is either seen by both or by neither, and a
replay on simulated time (where an instant has no duration) meets the same state. With a
`recorder` each decision is recorded as its plain record (kairos.andes.decisions) with the
time it was made. The simulator is this driver on a `SimClock` with a worker that only charges
the latency profile's time; the server is this driver on an `AsyncioClock` in the engine's
thread with the torch engine as the worker, which really computes (its iteration ends as soon
as it returns). A test runs both on one seed and checks they decide the same.

Two ways to run it: on a clock with timers, `add`/`abort` (or `wake()` after changing the
scheduler under the lock, from any thread) start the event-driven loop, which stops by itself
when nothing can run; `run_once()` does one iteration synchronously, for offline use of a real
worker (its clock then only needs `now`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kairos.andes.request import Request
from kairos.andes.scheduler import Scheduler, SchedulerOutput
from kairos.decisions import Recorder
from kairos.sim import Clock, Timers


@dataclass
class Executed:
    """What a worker reports about an iteration it carried out."""

    stopped: list[str] = field(default_factory=list)  # ids whose new token ends them
    duration_s: float = 0.0  # the time it still takes (a real worker's has already passed)


class Worker(Protocol):
    def execute(self, out: SchedulerOutput) -> Executed:
        """Carry out one decision."""
        ...

    def recorded(self, out: SchedulerOutput, executed: Executed, t: float) -> None:
        """The scheduler recorded the iteration at time `t` (stream its tokens now)."""
        ...


# (time, the decision) for every iteration, as it was decided
DecisionHook = Callable[[float, SchedulerOutput], None]


class Driver:
    def __init__(
        self,
        scheduler: Scheduler,
        worker: Worker,
        clock: Clock,
        *,
        lock: contextlib.AbstractContextManager[Any] | None = None,
        on_decision: DecisionHook | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        """`lock` guards the scheduler while it changes (other threads add and abort);
        `on_error`: what to do when the worker fails an iteration (the loop then goes on);
        without it the failure propagates. `recorder` gets every decision's record."""
        self.scheduler, self.worker = scheduler, worker
        self.clock = clock
        self.lock = lock or contextlib.nullcontext()
        self.on_decision, self.on_error = on_decision, on_error
        self.recorder = recorder
        self.busy = False  # an iteration is under way or about to start
        self.iterations = 0

    @property
    def clock(self) -> Clock:
        return self._clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        """A server moves the driver onto its engine thread's loop clock when it starts."""
        self._clock = clock
        self._timers = clock if isinstance(clock, Timers) else None

    # -- inputs (any thread) ------------------------------------------------------------------
    def add(self, request: Request) -> None:
        with self.lock:
            self.scheduler.add_request(request)
        self.wake()

    def abort(self, request_ids: list[str], reason: str = "abort") -> None:
        with self.lock:
            self.scheduler.finish_requests(request_ids, self.clock.now(), reason)
        self.wake()

    def wake(self) -> None:
        """The scheduler changed: iterate unless already iterating. Deferred to the clock's
        thread, after every arrival of this instant (they are all queued before the next
        decision); a no-op on a clock without timers (synchronous use)."""
        if self._timers is not None:
            self._timers.call_soon_threadsafe(self._kick)

    def _kick(self) -> None:
        if not self.busy:
            self.busy = True
            self._iterate()

    # -- one iteration ----------------------------------------------------------------------
    def decide(self, now: float | None = None) -> SchedulerOutput | None:
        """The next iteration's decision, made at `now` (default: the clock's now)."""
        with self.lock:
            t = self.clock.now() if now is None else now
            out = self.scheduler.schedule(t)
        if self.recorder is not None:  # every decision, "nothing to run" too: the policy was
            self.recorder.record(t, out.decision())  # asked, and a replay must ask it then
        if out.is_empty and not out.block_copies:
            if out.finished:  # stopped inside schedule (outgrew the cache): report them
                self.complete(out, Executed(), t)
            return None
        self.iterations += 1
        if self.on_decision is not None:
            self.on_decision(t, out)
        return out

    def complete(self, out: SchedulerOutput, executed: Executed, now: float | None = None) -> None:
        with self.lock:
            t = self.clock.now() if now is None else now
            self.scheduler.update_from_output(out, t, executed.stopped)
        self.worker.recorded(out, executed, t)

    def run_once(self) -> bool:
        """One synchronous iteration (offline, real worker); False when nothing could run."""
        out = self.decide()
        if out is None:
            return False
        self.complete(out, self.worker.execute(out))
        return True

    # -- the loop on the clock --------------------------------------------------------------
    def _iterate(self) -> None:
        self._execute(self.decide())

    def _execute(self, out: SchedulerOutput | None) -> None:
        if out is None:
            self.busy = False
            return
        try:
            executed = self.worker.execute(out)
        except Exception as exc:
            if self.on_error is None:
                raise
            self.busy = False
            self.on_error(exc)
            self.wake()
            return
        end = self._clock.now() + executed.duration_s
        self._loop_clock().call_at(end, self._end, out, executed)

    def _end(self, out: SchedulerOutput, executed: Executed) -> None:
        with self.lock:  # the results and the next decision at one instant (module docstring)
            t = self._clock.now()
            self.complete(out, executed, t)
            following = self.decide(t)
        self._execute(following)

    def _loop_clock(self) -> Timers:
        if self._timers is None:
            raise TypeError("the event-driven loop needs a clock with timers (call_at)")
        return self._timers
