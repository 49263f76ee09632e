"""The decide/execute loop around an Orloj `BatchPolicy`, written once over a clock and a worker.

The simulator is this driver on a `SimClock` with the simulated worker; the real server is
this driver on an `AsyncioClock` with a PyTorch executor. The contract (spec 6.1):

* arrivals go to `on_arrival`; whenever the worker is idle, or a wake-up the policy asked for
  comes due (busy or not), the policy is asked for `next_batch`. A batch returned while the
  worker is busy waits in the worker's FIFO queue: that is how schedule-ahead policies
  (Clockwork) submit early. Finished and rejected batches go to `on_batch_done` (rejected and
  failed with `measured_ms = nan`);
* the profiler samples finished requests and has them re-run alone: on the worker while it is
  idle and nothing is pending, or beside it when the worker profiles in the shadow. Every
  `period_ms` what it measured goes to `on_profile`;
* scheduler CPU time (`thread_time`: this thread's CPU, not the machine's load) is kept per
  decision; with `charge_overhead` it also delays the batch (the simulator's way of charging
  decision and table-rebuild time that the real server pays in wall time);
* with a `recorder`, every batch and every drop is recorded, with the time it was decided, as
  a plain record (`kairos.orloj.decisions`): a decision log, or what a replay compares.

Times handed to the policy are milliseconds (Orloj's unit); the clock is in seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kairos.decisions import Recorder
from kairos.orloj.decisions import BatchDecision, Drop
from kairos.orloj.policy import Batch, BatchPolicy, Outcome, ProfileSnapshot, Request
from kairos.orloj.profiler import Profiler
from kairos.orloj.stats import DriverStats
from kairos.orloj.worker import BatchRecord, BatchRun, SoloRun, Worker
from kairos.sim import Timers


class PolicyError(RuntimeError):
    """The policy broke the contract: ended a request twice, or batched a finished one."""


# A request ended: (request, the run it was in or None, its index in that run).
EndHook = Callable[[Request, BatchRun | None, int], None]


class Driver:
    def __init__(
        self,
        policy: BatchPolicy,
        clock: Timers,
        worker: Worker,
        profiler: Profiler | None = None,
        *,
        on_end: EndHook | None = None,
        predict: Callable[[Batch], float] | None = None,
        charge_overhead: bool = False,
        overhead_factor: float = 1.0,
        history: int | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.policy, self.clock, self.worker = policy, clock, worker
        self.recorder = recorder
        self.profiler = profiler or Profiler()
        self.on_end, self.predict = on_end, predict
        self.charge_overhead, self.overhead_factor = charge_overhead, overhead_factor
        self.stats = DriverStats(history)
        self.open: dict[int, Request] = {}
        self.accepting = True  # False while draining: no new batches
        self._dispatched: dict[int, float] = {}  # id(batch) -> decided at (ms)
        self._batched: set[int] = set()  # ids of open requests handed to the worker
        self._in_flight = 0  # batches handed to the worker, not yet back
        self._profiling = 0  # re-runs handed to the worker, not yet back
        self._blocked_until = -math.inf  # charged table-rebuild time (ms)
        self._timer: Any = None
        self._timer_at = math.nan
        self._tick: Any = None
        self._retried = math.nan  # the past wake-up last retried

    def now_ms(self) -> float:
        return self.clock.now() * 1e3

    # -- inputs ---------------------------------------------------------------------------------
    def warm_start(self, offline: Mapping[str, Sequence[float]] | None) -> None:
        """The offline profile, then what a profiler kept from an earlier run has measured."""
        if offline:
            self._profile(ProfileSnapshot({a: list(v) for a, v in offline.items()}))
        learned = self.profiler.snapshot()
        if learned is not None:
            self._profile(learned)

    def arrive(self, r: Request) -> None:
        now = max(self.now_ms(), r.release)  # seconds -> ms may round just below the release
        self.open[r.request_id] = r
        t0 = time.thread_time()
        rejected = self.policy.on_arrival(r, now)
        self.stats.arrival_cpu_s.append(time.thread_time() - t0)
        if rejected and self.recorder is not None:
            self.recorder.record(now / 1e3, Drop.of(rejected, on_arrival=True))
        for x in rejected:
            self._end(x, Outcome.TIMED_OUT, now)
        self._ensure_tick()
        self.kick(now)

    def on_result(self, result: BatchRun | SoloRun) -> None:
        """The worker handed something back (call it on the clock's thread)."""
        if isinstance(result, SoloRun):
            self._profiling = max(0, self._profiling - 1)
            self.profiler.record(result.request, result.solo_ms)
            self.kick()
            return
        self._in_flight -= 1
        batch, now = result.batch, self.now_ms()
        decided = self._dispatched.pop(id(batch), now)
        ids = tuple(r.request_id for r in batch.requests)
        self.stats.records.append(
            BatchRecord(decided, result.start_ms, result.end_ms, ids, rejected=result.rejected)
        )
        if result.outputs is None:
            batch.meta["rejected" if result.rejected else "failed"] = 1.0
            if result.rejected:
                self.stats.rejected_batches += 1
            else:
                self.stats.failed_batches += 1
            for i, r in enumerate(batch.requests):
                self._end(r, Outcome.TIMED_OUT, result.end_ms, result, i)
        else:
            self._count_run(result)
            for i, r in enumerate(batch.requests):
                r.batch_size = batch.size
                ok = result.end_ms <= r.deadline
                self._end(r, Outcome.OK if ok else Outcome.LATE, result.end_ms, result, i)
            self.profiler.observe(batch, result.measured_ms, result.solo_ms)
        self.policy.on_batch_done(batch, now, result.measured_ms)
        self.kick(now)

    def end_all(self, outcome: Outcome) -> list[Request]:
        """End every open request (a run's horizon, or a server shutting down)."""
        now, left = self.now_ms(), list(self.open.values())
        for r in left:
            self._end(r, outcome, now)
        return left

    def close(self) -> None:
        """Stop deciding and cancel this driver's timers."""
        self.accepting = False
        for handle in (self._timer, self._tick):
            if handle is not None:
                self.clock.cancel(handle)
        self._timer = self._tick = None

    @property
    def busy(self) -> bool:
        return self._in_flight > 0 or self._profiling > 0

    # -- the loop -------------------------------------------------------------------------------
    def _idle(self) -> bool:
        return self._in_flight == 0 and (self.worker.shadow_profiling or self._profiling == 0)

    def kick(self, now: float | None = None, forced: bool = False) -> None:
        if not self.accepting:
            return
        now = self.now_ms() if now is None else now
        wake = self.policy.next_wakeup(now)
        due = forced or (wake is not None and wake <= now)
        while self._idle() or due:
            decided = self._decide(now)
            if decided is None:
                break
            batch, ready = decided
            self._in_flight += 1
            self._dispatched[id(batch)] = now
            self.worker.submit(batch, ready)
            wake = self.policy.next_wakeup(now)
            due = wake is not None and wake <= now
        self._profile_reruns()
        wake = self.policy.next_wakeup(now)
        if wake is not None and wake <= now:
            # due, yet nothing came of deciding (a deadline check that rounding left a hair
            # short): ask once more a nanosecond on, rather than never, which strands requests
            retry, self._retried = wake != self._retried, wake
            wake = now + 1e-6 if retry else None
        self._arm(wake, now)

    def _decide(self, now: float) -> tuple[Batch, float] | None:
        t0 = time.thread_time()
        batch, dropped = self.policy.next_batch(now)
        cpu = time.thread_time() - t0
        self.stats.decide_cpu_s.append(cpu)
        self.stats.decisions += 1
        self.stats.decide_cpu_total_s += cpu
        if dropped and self.recorder is not None:
            self.recorder.record(now / 1e3, Drop.of(dropped, on_arrival=False))
        for r in dropped:
            self._end(r, Outcome.TIMED_OUT, now)
        if batch is None:
            return None
        if not batch.requests:
            raise PolicyError(f"{self.policy.name}: returned an empty batch")
        for r in batch.requests:
            if r.request_id not in self.open or r.request_id in self._batched:
                raise PolicyError(f"{self.policy.name}: request {r.request_id} batched twice")
            self._batched.add(r.request_id)
        ready = now  # never before its decision (seconds -> ms can round a clock reading down)
        if self.charge_overhead:
            ready = max(now, self._blocked_until) + cpu * 1e3 * self.overhead_factor
        if self.recorder is not None:
            self.recorder.record(now / 1e3, BatchDecision.of(batch, ready))
        return batch, ready

    def _profile_reruns(self) -> None:
        if self.worker.shadow_profiling:
            while (job := self.profiler.next_job()) is not None:
                self._profiling += 1
                self.worker.submit_solo(job)
        elif self._idle() and self._profiling == 0 and self.policy.pending() == 0:
            job = self.profiler.next_job()
            if job is not None:
                self._profiling += 1
                self.worker.submit_solo(job)

    def _arm(self, wake: float | None, now: float) -> None:
        if self._timer is not None and wake == self._timer_at:
            return
        if self._timer is not None:
            self.clock.cancel(self._timer)
        self._timer, self._timer_at = None, math.nan
        if wake is not None and wake > now:
            self._timer, self._timer_at = self.clock.call_at(wake / 1e3, self._on_timer), wake

    def _on_timer(self) -> None:
        at = self._timer_at  # seconds -> ms may round just below it: then it would re-arm
        self._timer, self._timer_at = None, math.nan
        self.kick(max(self.now_ms(), at), forced=True)

    # -- bookkeeping ----------------------------------------------------------------------------
    def _end(
        self, r: Request, outcome: Outcome, t: float, run: BatchRun | None = None, i: int = 0
    ) -> None:
        if self.open.pop(r.request_id, None) is None:
            raise PolicyError(f"{self.policy.name}: request {r.request_id} ended twice")
        self._batched.discard(r.request_id)
        r.outcome, r.finish = outcome, t
        self.stats.count(r.app, outcome)
        if self.on_end is not None:
            self.on_end(r, run, i)

    def _count_run(self, run: BatchRun) -> None:
        s = self.stats
        s.batches += 1
        s.batched_requests += run.batch.size
        s.busy_ms += run.measured_ms
        predicted = self.predict(run.batch) if self.predict is not None else math.nan
        if self.predict is not None:
            s.predicted_ms += predicted
        s.recent.append((run.start_ms, run.batch.size, run.measured_ms, predicted))

    # -- profiles -------------------------------------------------------------------------------
    def _profile(self, snapshot: ProfileSnapshot) -> None:
        t0 = time.thread_time()
        self.policy.on_profile(snapshot)
        cpu = time.thread_time() - t0
        self.stats.profile_cpu_s += cpu
        if self.charge_overhead:
            self._blocked_until = self.now_ms() + cpu * 1e3 * self.overhead_factor

    def _ensure_tick(self) -> None:
        if self._tick is None and self.accepting:
            period_s = self.profiler.period_ms / 1e3
            self._tick = self.clock.call_at(self.clock.now() + period_s, self._on_tick)

    def _on_tick(self) -> None:
        self._tick = None
        snapshot = self.profiler.snapshot()
        if snapshot is not None:
            self._profile(snapshot)
        # keep ticking while something can still happen without an arrival (an arrival
        # re-arms it): requests a stuck policy holds with no wake-up must not tick forever
        if self.busy or self.profiler.pending or self._timer is not None:
            self._ensure_tick()
        if snapshot is not None:
            self.kick()
