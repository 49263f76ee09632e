"""The frontend: drives any `BatchPolicy` in real time, on an asyncio loop, over the worker.

This is the real-time twin of `kairos.orloj.simulator` and follows the same contract, so the
very policy objects the simulator runs serve real requests unchanged: arrivals go to
`on_arrival`; whenever the worker is idle (or a wake-up the policy asked for comes due) the
policy is asked for `next_batch`; finished and rejected batches go to `on_batch_done` (rejected
with NaN, as in the simulator); profile snapshots go to `on_profile` every period. Time is
milliseconds on the executor's monotonic wall clock, which the worker's timings use too;
policies are only ever called from the event loop thread, so they need no locks.

Each submitted request gets a future that resolves to a `Completion` once it has run, was
dropped by the policy, or was rejected by the worker. Scheduler CPU time per iteration is
measured and kept (spec 6.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kairos.orloj.policy import Batch, BatchPolicy, Outcome, ProfileSnapshot, Request
from kairos.orloj.runtime.executor import BatchRun, Executor, SoloRun, ThreadExecutor
from kairos.orloj.runtime.models import ServedModel
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.profiler import Profiler
from kairos.orloj.runtime.results import Completion, DispatchStats, Overloaded, Unavailable

__all__ = ["Completion", "Dispatcher", "Overloaded", "Unavailable"]

# Request ids are unique for the life of the process, not per dispatcher: a policy kept across
# dispatchers deletes lazily by id, and a reused id would match a stale entry of an old request.
_REQUEST_IDS = itertools.count()


class Dispatcher:
    """Serves `policy` over `executor` (default: a worker process for `model`). An executor
    that is not running yet is started and stopped with the dispatcher; a running one is only
    borrowed (share one between runs). `offline` is the warm-start profile; `predict` (the
    calibration's g_k) feeds the drift statistic. A policy and profiler kept from an earlier
    run carry what that run learned (what the profiler measured after its last snapshot is
    handed over at start), as a long-running server would."""

    def __init__(
        self,
        policy: BatchPolicy,
        model: ServedModel,
        executor: Executor | None = None,
        *,
        profiler: Profiler | None = None,
        offline: Mapping[str, Sequence[float]] | None = None,
        max_open: int = 4096,
        predict: Callable[[Batch], float] | None = None,
    ) -> None:
        self.policy = policy
        self.model = model
        self.profiler = profiler or Profiler()
        self.offline = offline
        self.max_open = max_open
        self.predict = predict
        if executor is None:
            executor = ProcessExecutor(model) if model.spec else ThreadExecutor(model)
        self.executor = executor
        self.now = executor.now_ms  # milliseconds on the clock the worker times with
        self.stats = DispatchStats()
        self.started_ms = math.nan
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open: dict[int, tuple[Request, asyncio.Future[Completion]]] = {}
        self._dispatched: set[int] = set()
        self._in_flight = 0  # batches submitted to the worker, not yet back
        self._profiling = False  # a profiler re-run is on the worker
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.nan
        self._profile_timer: asyncio.TimerHandle | None = None
        self._running = False
        self._draining = False
        self._owns_executor = False

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._running and not self._draining and self.executor.alive

    @property
    def open_requests(self) -> int:
        return len(self._open)

    async def start(self) -> None:
        """Warm-start the policy, start (or borrow) the worker, start the profile timer.

        Everything allocated so far (torch, the model, the policy's tables) is moved out of
        the garbage collector's reach (`gc.freeze`): a full collection over it paused the
        event loop for 100-160 ms mid-run, during which no batch could be dispatched."""
        self._loop = asyncio.get_running_loop()
        if self.offline:  # the warm start, as the simulator gives it before the first arrival
            self._on_profile(ProfileSnapshot({a: list(v) for a, v in self.offline.items()}))
        learned = self.profiler.snapshot()  # a borrowed profiler's samples not yet handed over
        if learned is not None:
            self._on_profile(learned)
        if self.executor.outstanding:
            raise RuntimeError("the executor still runs another dispatcher's jobs")
        self.executor.deliver = self._from_worker
        self._owns_executor = not self.executor.alive
        if self._owns_executor:
            await asyncio.to_thread(self.executor.start)
        gc.collect()
        gc.freeze()
        self.started_ms = self.now()
        self._running, self._draining = True, False
        self._profile_timer = self._loop.call_later(
            self.profiler.period_ms / 1e3, self._profile_tick
        )

    async def stop(self, drain_s: float = 30.0) -> None:
        """Stop taking requests, let the batches on the worker finish and answer their
        members, then fail every other open request (503) and stop an owned worker."""
        self._draining = True
        for handle in (self._timer, self._profile_timer):
            if handle is not None:
                handle.cancel()
        waited = 0.0
        while (self._in_flight or self._profiling) and self.executor.alive and waited < drain_s:
            await asyncio.sleep(0.01)
            waited += 0.01
        self._running = False
        if self._owns_executor:
            await asyncio.to_thread(self.executor.stop)
        for _, fut in list(self._open.values()):
            if not fut.done():
                fut.set_exception(Unavailable("the server is shutting down"))
        self._open.clear()

    # -- requests -------------------------------------------------------------------------------
    def submit(self, app: str, slo_ms: float, payload: object) -> asyncio.Future[Completion]:
        """Hand one validated request to the policy; its future resolves when it ends."""
        if not self.running or self._loop is None:
            raise Unavailable("the Orloj worker is not running")
        if len(self._open) >= self.max_open:
            raise Overloaded(f"{len(self._open)} requests are open (limit {self.max_open})")
        now = self.now()
        req = Request(next(_REQUEST_IDS), app, release=now, slo=float(slo_ms), payload=payload)
        fut: asyncio.Future[Completion] = self._loop.create_future()
        self._open[req.request_id] = (req, fut)
        for r in self.policy.on_arrival(req, now):
            self._finish(r, Outcome.TIMED_OUT, now)
        self._kick(now)
        return fut

    def _finish(
        self, r: Request, outcome: Outcome, t: float, run: BatchRun | None = None, i: int = 0
    ) -> None:
        entry = self._open.pop(r.request_id, None)
        if entry is None:
            raise RuntimeError(f"{self.policy.name}: request {r.request_id} ended twice")
        r.outcome, r.finish = outcome, t
        self.stats.count(r.app, outcome)
        extra: dict[str, Any] = {}
        if run is not None:
            extra = {"rejected": run.rejected, "error": run.error}
            if run.outputs is not None:
                extra |= {"start_ms": run.start_ms, "batch_size": run.batch.size}
                extra["output"] = run.outputs[i]
        done = Completion(r.request_id, r.app, outcome, r.release, t, **extra)
        fut = entry[1]
        if not fut.done():  # a caller that gave up cancelled it
            fut.set_result(done)

    # -- the scheduling loop (mirrors Simulator._after_event) ---------------------------------
    def _idle(self) -> bool:
        return self._in_flight == 0 and not self._profiling

    def _kick(self, now: float | None = None, forced: bool = False) -> None:
        if not self.running:  # also while draining: no new batches
            return
        now = self.now() if now is None else now
        wake = self.policy.next_wakeup(now)
        due = forced or (wake is not None and wake <= now)
        while self._idle() or due:
            batch = self._decide(now)
            if batch is None:
                break
            self._in_flight += 1
            self.executor.submit(batch)
            wake = self.policy.next_wakeup(now)
            due = wake is not None and wake <= now
        if self._idle() and self.policy.pending() == 0:
            job = self.profiler.next_job()
            if job is not None:
                self._profiling = True
                self.executor.submit_solo(job)
        self._arm(self.policy.next_wakeup(now), now)

    def _decide(self, now: float) -> Batch | None:
        t0 = time.thread_time()
        batch, dropped = self.policy.next_batch(now)
        cpu = time.thread_time() - t0
        self.stats.decide_cpu_s.append(cpu)
        self.stats.decisions += 1
        self.stats.decide_cpu_total_s += cpu
        for r in dropped:
            self._finish(r, Outcome.TIMED_OUT, now)
        if batch is None:
            return None
        if not batch.requests:
            raise RuntimeError(f"{self.policy.name} returned an empty batch")
        for r in batch.requests:
            if r.request_id in self._dispatched or r.request_id not in self._open:
                raise RuntimeError(f"{self.policy.name}: request {r.request_id} batched twice")
            self._dispatched.add(r.request_id)
        return batch

    def _arm(self, wake: float | None, now: float) -> None:
        if wake == self._timer_at and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.nan
        if wake is not None and wake > now and self._loop is not None:
            self._timer = self._loop.call_later((wake - now) / 1e3, self._on_timer)
            self._timer_at = wake

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, math.nan
        self._kick(forced=True)

    # -- worker results (hop from the worker thread to the loop) -------------------------------
    def _from_worker(self, result: BatchRun | SoloRun) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
            loop.call_soon_threadsafe(self._on_result, result)

    def _on_result(self, result: BatchRun | SoloRun) -> None:
        if not self._running:  # stopped: its requests were failed already
            return
        if isinstance(result, SoloRun):
            self._profiling = False
            self.profiler.record(result.request, result.solo_ms)
            self._kick()
            return
        self._in_flight -= 1
        batch, now = result.batch, self.now()
        for r in batch.requests:
            self._dispatched.discard(r.request_id)
        if result.outputs is None:
            batch.meta["rejected" if result.rejected else "failed"] = 1.0
            if result.rejected:
                self.stats.rejected_batches += 1
            else:
                self.stats.failed_batches += 1
            for i, r in enumerate(batch.requests):
                self._finish(r, Outcome.TIMED_OUT, result.end_ms, result, i)
        else:
            self.stats.batches += 1
            self.stats.batched_requests += batch.size
            self.stats.busy_ms += result.measured_ms
            predicted = self.predict(batch) if self.predict is not None else math.nan
            if self.predict is not None:
                self.stats.predicted_ms += predicted
            self.stats.recent.append((result.start_ms, batch.size, result.measured_ms, predicted))
            for i, r in enumerate(batch.requests):
                r.batch_size = batch.size
                ok = result.end_ms <= r.deadline
                self._finish(r, Outcome.OK if ok else Outcome.LATE, result.end_ms, result, i)
            self.profiler.observe(batch, result.measured_ms)
        self.policy.on_batch_done(batch, now, result.measured_ms)
        self._kick(now)

    # -- profiling ------------------------------------------------------------------------------
    def _on_profile(self, snapshot: ProfileSnapshot) -> None:
        t0 = time.thread_time()
        self.policy.on_profile(snapshot)
        self.stats.profile_cpu_s += time.thread_time() - t0

    def _profile_tick(self) -> None:
        if not self._running or self._loop is None:
            return
        snapshot = self.profiler.snapshot()
        if snapshot is not None:
            self._on_profile(snapshot)
            self._kick()
        self._profile_timer = self._loop.call_later(
            self.profiler.period_ms / 1e3, self._profile_tick
        )
