"""The worker: owns the model and runs one batch at a time, non-preemptively.

A batch handed over while another runs waits in FIFO order (that is how schedule-ahead
policies such as Clockwork submit actions early). A batch carrying `latest_start` that cannot
start by then is rejected without running, failing all its members: Clockwork's action window,
which the worker, not the policy, must enforce. Profiler re-runs (one request alone) are handed
over only while the worker is idle (the dispatcher's job) and run like batches.

Two ways to host the model, behind one interface (`submit`, `submit_solo`, results to a
`deliver` callback on a background thread): `ProcessExecutor` (`process.py`, the default for
serving: its own interpreter, so the frontend's Python work cannot slow the model through the
GIL) and `ThreadExecutor` here (a thread in this process: fast to start, for tests and quick
experiments, but timings suffer whenever the frontend is busy).

Timing is wall clock around the forward pass (with a device synchronize on a GPU) on the
executor's clock (`now_ms`, a monotonic clock shared by both processes), which the dispatcher
uses too, so start and end times compare directly with deadlines. The model runs under
`torch.inference_mode()` with `torch.set_num_threads(threads)` (1 by default: on a two-core
box the other core is left to the frontend) after a warm-up of every batch size.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kairos.orloj.policy import Batch, Request
from kairos.orloj.runtime.forward import (
    WARM_SIZES,
    JobResult,
    configure_threads,
    execute,
    warm_up,
)
from kairos.orloj.runtime.models import ServedModel
from kairos.orloj.worker import BatchRun, Delivery, SoloRun
from kairos.sim.clock import WallClock

if TYPE_CHECKING:
    from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig


class Executor(ABC):
    """The shared half: the clock, job bookkeeping, turning job results into runs."""

    def __init__(self, model: ServedModel) -> None:
        self.model = model
        self.clock = WallClock()
        self.deliver: Delivery = lambda _run: None  # set by the dispatcher that uses it
        self._jobs: dict[int, Batch | Request] = {}
        self._next_job = 0
        self._lock = threading.Lock()

    @property
    def origin(self) -> float:
        """The `time.monotonic()` value this worker's times count from (an asyncio loop's
        time is monotonic too, so the dispatcher's clock shares it)."""
        return self.clock.origin

    def now_ms(self) -> float:
        """Milliseconds on the monotonic clock every party uses (any thread or process)."""
        return self.clock.now() * 1e3

    @property
    def outstanding(self) -> int:
        """Jobs submitted and not yet reported back."""
        return len(self._jobs)

    @property
    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def start(self) -> None:
        """Build/warm up the worker; returns once it takes jobs."""

    @abstractmethod
    def stop(self) -> None:
        """Finish the running job, drop queued ones, end the worker."""

    @abstractmethod
    def calibrate(self, config: CalibrationConfig | None = None) -> Calibration:
        """Calibrate the model where it runs (before serving)."""

    @abstractmethod
    def _send(self, job: int, xs: list[Any], latest: float | None) -> None: ...

    def _register(self, item: Batch | Request) -> int:
        with self._lock:
            job, self._next_job = self._next_job, self._next_job + 1
            self._jobs[job] = item
        return job

    shadow_profiling = False  # re-runs take the worker: the driver hands them over when idle

    def submit(self, batch: Batch, not_before_ms: float = -math.inf) -> None:
        """Queue a batch; it starts when the worker is free (`not_before_ms` is for simulated
        workers: here the decision's time has really passed)."""
        job = self._register(batch)
        self._send(job, [_payload(r) for r in batch.requests], batch.latest_start)

    def submit_solo(self, request: Request) -> None:
        self._send(self._register(request), [_payload(request)], None)

    def _finished(self, job: int, result: JobResult) -> None:
        """Deliver a job's result once: a dead worker's job can be failed both by the send that
        found the pipe broken and by the reader that saw it close; the second is ignored."""
        with self._lock:
            item = self._jobs.pop(job, None)
        if item is None:
            return
        start, end, outputs, rejected, error = result
        if isinstance(item, Request):
            solo = end - start if outputs is not None else math.nan
            self.deliver(SoloRun(item, solo, error))
        else:
            self.deliver(BatchRun(item, start, end, outputs, rejected, error))

    def _fail_all(self, reason: str) -> None:
        with self._lock:
            jobs = sorted(self._jobs)
        now = self.now_ms()
        for job in jobs:
            self._finished(job, (now, now, None, False, reason))


def _payload(r: Request) -> BaseModel:
    if not isinstance(r.payload, BaseModel):
        raise TypeError(f"request {r.request_id} has no validated input payload")
    return r.payload


class ThreadExecutor(Executor):
    def __init__(
        self, model: ServedModel, threads: int = 1, warm_sizes: Sequence[int] = WARM_SIZES
    ) -> None:
        super().__init__(model)
        self.threads, self.warm_sizes = threads, tuple(warm_sizes)
        self._queue: list[tuple[int, list[Any], float | None] | None] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="orloj-worker", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        configure_threads(self.threads)
        warm_up(self.model, self.warm_sizes)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._queue = [None]  # drop what waits; the dispatcher fails its requests
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(30.0)

    def calibrate(self, config: CalibrationConfig | None = None) -> Calibration:
        from kairos.orloj.runtime.calibrate import calibrate

        if self.outstanding:
            raise RuntimeError("calibrate the worker before serving, not during")
        return calibrate(self.model, config)

    def _send(self, job: int, xs: list[Any], latest: float | None) -> None:
        with self._cond:
            self._queue.append((job, xs, latest))
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                item = self._queue.pop(0)
            if item is None:
                return
            job, xs, latest = item
            self._finished(job, execute(self.model, xs, latest, self.now_ms))
