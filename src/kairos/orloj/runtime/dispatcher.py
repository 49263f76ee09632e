"""The frontend: serves any `BatchPolicy` in real time with the one Orloj driver.

The decide/execute loop is `kairos.orloj.driver.Driver`, the same object the simulator runs;
here it runs on an `AsyncioClock` (the server's event loop, monotonic wall time shared with
the worker's timings) over a real executor, whose results hop from the worker's thread to the
loop. Policies are only ever called from the event loop thread, so they need no locks. What
the dispatcher adds is serving: each submitted request gets a future that resolves to a
`Completion` once it has run, was dropped by the policy, or was rejected by the worker; a
bound on open requests; and start, drain and stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from kairos.decisions import Recorder
from kairos.orloj.driver import Driver
from kairos.orloj.policy import Batch, BatchPolicy, Request
from kairos.orloj.profiler import Profiler
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.models import ServedModel
from kairos.orloj.runtime.process import ProcessExecutor
from kairos.orloj.runtime.results import Completion, Overloaded, Unavailable
from kairos.orloj.stats import DriverStats
from kairos.orloj.worker import BatchRun, Delivery, SoloRun, Worker
from kairos.sim import AsyncioClock

__all__ = ["Completion", "Dispatcher", "Overloaded", "Unavailable"]

log = logging.getLogger(__name__)

# Request ids are unique for the life of the process, not per dispatcher: a policy kept across
# dispatchers deletes lazily by id, and a reused id would match a stale entry of an old request.
_REQUEST_IDS = itertools.count()


class ServingWorker(Worker, Protocol):
    """A worker the dispatcher can serve with: a real executor, or a simulated worker in
    virtual time (tests). `origin` is the `loop.time()` value its timings count from."""

    deliver: Delivery

    @property
    def origin(self) -> float: ...

    @property
    def alive(self) -> bool: ...

    @property
    def outstanding(self) -> int: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


@runtime_checkable
class Restartable(Protocol):
    """A worker that can be replaced when it dies (`ProcessExecutor`)."""

    @property
    def pid(self) -> int | None: ...

    def exit_status(self) -> str: ...

    def restart(self) -> None: ...


class Dispatcher:
    """Serves `policy` over `executor` (default: a worker process for `model`). An executor
    that is not running yet is started and stopped with the dispatcher; a running one is only
    borrowed (share one between runs). `offline` is the warm-start profile; `predict` (the
    calibration's g_k) feeds the drift statistic; `recorder` gets every decision (a decision
    log). A policy and profiler kept from an earlier
    run carry what that run learned (what the profiler measured after its last snapshot is
    handed over at start), as a long-running server would.

    A restartable worker is supervised: when it dies its death is logged, its jobs fail (the
    server answers them 503 + Retry-After), and a fresh worker is started and warmed up. A
    crash loop is bounded: after `max_restarts` restarts within `restart_window_s` seconds the
    dispatcher gives up and stays unavailable (`state == "failed"`)."""

    def __init__(
        self,
        policy: BatchPolicy,
        model: ServedModel | None,
        executor: ServingWorker | None = None,
        *,
        profiler: Profiler | None = None,
        offline: Mapping[str, Sequence[float]] | None = None,
        max_open: int = 4096,
        predict: Callable[[Batch], float] | None = None,
        max_restarts: int = 3,
        restart_window_s: float = 300.0,
        watch_s: float = 0.05,
        recorder: Recorder | None = None,
    ) -> None:
        self.policy = policy
        self.recorder = recorder
        self.model = model
        self.profiler = profiler or Profiler()
        self.offline = offline
        self.max_open = max_open
        self.predict = predict
        if executor is None:
            if model is None:
                raise ValueError("a dispatcher needs a model or a worker")
            executor = ProcessExecutor(model) if model.spec else ThreadExecutor(model)
        self.executor: ServingWorker = executor
        self.stats = DriverStats(history=10_000)
        self.started_ms = math.nan
        self.driver: Driver | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._futures: dict[int, asyncio.Future[Completion]] = {}
        self._transit: dict[int, float] = {}  # request id -> its client-side transit (ms)
        self._running = False
        self._owns_executor = False
        self.max_restarts, self.restart_window_s, self.watch_s = (
            max_restarts,
            restart_window_s,
            watch_s,
        )
        self.restarts = 0  # workers replaced over the dispatcher's life
        self.state = "stopped"  # ok | restarting | failed | stopped
        self._restart_times: deque[float] = deque()
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    def now(self) -> float:
        """Milliseconds on the clock the worker times with (the loop's, from its origin)."""
        loop = self._loop
        return (loop.time() - self.executor.origin) * 1e3 if loop else math.nan

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        d = self.driver
        return self._running and d is not None and d.accepting and self.executor.alive

    @property
    def open_requests(self) -> int:
        return len(self._futures)

    async def start(self) -> None:
        """Warm-start the policy, start (or borrow) the worker, start deciding.

        Everything allocated so far (torch, the model, the policy's tables) is moved out of
        the garbage collector's reach (`gc.freeze`): a full collection over it pauses the
        event loop mid-run for longer than a batch, and no batch is dispatched meanwhile
        (docs/orloj.md, "The real server")."""
        self._loop = loop = asyncio.get_running_loop()
        if self.executor.outstanding:
            raise RuntimeError("the executor still runs another dispatcher's jobs")
        # The executor's clock and the loop's are both time.monotonic(): one origin for both.
        clock = AsyncioClock(loop, origin=self.executor.origin)
        self.driver = Driver(
            self.policy,
            clock,
            self.executor,
            self.profiler,
            on_end=self._answer,
            predict=self.predict,
            history=10_000,
            recorder=self.recorder,
        )
        self.driver.stats = self.stats  # one record across the dispatcher's life
        self.driver.warm_start(self.offline)
        self.executor.deliver = self._from_worker
        self._owns_executor = not self.executor.alive
        if self._owns_executor:
            await asyncio.to_thread(self.executor.start)
        gc.collect()
        gc.freeze()
        self.started_ms = self.now()
        self._running, self._stopping = True, False
        self.state = "ok"
        if isinstance(self.executor, Restartable):
            self._supervisor = loop.create_task(self._supervise(self.executor))

    async def _supervise(self, worker: Restartable) -> None:
        """Watch the worker; replace it when it dies, within the crash-loop bound."""
        while not self._stopping:
            await asyncio.sleep(self.watch_s)
            if self._stopping or self.executor.alive:
                continue
            self.state = "restarting"
            status = await asyncio.to_thread(worker.exit_status)
            now = time.monotonic()
            times = self._restart_times
            while times and now - times[0] > self.restart_window_s:
                times.popleft()
            if len(times) >= self.max_restarts:
                log.error(
                    "orloj worker pid %s died (%s); %d restarts within %.0f s: giving up",
                    worker.pid, status, len(times), self.restart_window_s,
                )  # fmt: skip
                self.state = "failed"
                return
            log.error(
                "orloj worker pid %s died (%s); in-flight requests get 503; restarting",
                worker.pid, status,
            )  # fmt: skip
            times.append(now)
            try:
                await asyncio.to_thread(worker.restart)
            except Exception as exc:  # a worker that cannot start again: count it, try later
                log.error("orloj worker restart failed: %s", exc)
                continue
            self.restarts += 1
            log.warning("orloj worker restarted as pid %s (restart %d)", worker.pid, self.restarts)
            self.state = "ok"

    async def stop(self, drain_s: float = 30.0) -> None:
        """Stop taking requests, let the batches on the worker finish and answer their
        members, then fail every other open request (503) and stop an owned worker."""
        d = self.driver
        self._stopping = True
        if self._supervisor is not None:  # lets a restart under way finish first
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        self.state = "stopped"
        if d is not None:
            d.close()
            waited = 0.0
            while d.busy and self.executor.alive and waited < drain_s:
                await asyncio.sleep(0.01)
                waited += 0.01
        self._running = False
        if self._owns_executor:
            await asyncio.to_thread(self.executor.stop)
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(Unavailable("the server is shutting down"))
        self._futures.clear()
        self._transit.clear()
        if d is not None:
            d.open.clear()

    # -- requests -------------------------------------------------------------------------------
    def submit(
        self, app: str, slo_ms: float, payload: object, transit_ms: float = 0.0
    ) -> asyncio.Future[Completion]:
        """Hand one validated request to the policy; its future resolves when it ends. A
        request the client sent `transit_ms` before it got here was released then: its
        deadline is the client's, so the policy sees the slack it really has left."""
        if not self.running or self._loop is None or self.driver is None:
            raise Unavailable("the Orloj worker is not running")
        if len(self._futures) >= self.max_open:
            raise Overloaded(f"{len(self._futures)} requests are open (limit {self.max_open})")
        if not (math.isfinite(transit_ms) and transit_ms >= 0):
            raise ValueError(f"transit_ms must be finite and >= 0, not {transit_ms}")
        release = self.now() - transit_ms
        req = Request(next(_REQUEST_IDS), app, release=release, slo=float(slo_ms), payload=payload)
        self._transit[req.request_id] = transit_ms
        fut: asyncio.Future[Completion] = self._loop.create_future()
        self._futures[req.request_id] = fut
        self.driver.arrive(req)
        return fut

    def _answer(self, r: Request, run: BatchRun | None, i: int) -> None:
        transit = self._transit.pop(r.request_id, 0.0)
        fut = self._futures.pop(r.request_id, None)
        if fut is None or fut.done():  # a caller that gave up cancelled it
            return
        assert r.outcome is not None
        extra: dict[str, Any] = {}
        if run is not None:
            extra = {"rejected": run.rejected, "error": run.error}
            if run.outputs is not None:
                extra |= {"start_ms": run.start_ms, "batch_size": run.batch.size}
                extra["output"] = run.outputs[i]
        extra["transit_ms"] = transit
        fut.set_result(Completion(r.request_id, r.app, r.outcome, r.release, r.finish, **extra))

    # -- worker results (hop from the worker thread to the loop) -------------------------------
    def _from_worker(self, result: BatchRun | SoloRun) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._on_result, result)
        except RuntimeError:  # the loop closed: nobody is waiting any more
            return

    def _on_result(self, result: BatchRun | SoloRun) -> None:
        if self._running and self.driver is not None:  # stopped: its requests were failed
            self.driver.on_result(result)
