"""The execution service (spec 2.1): one object on the server's event loop that owns the
device, the jobs' sessions and the lanes' threads, and runs the Salus driver over them.

A submitted job is built and profiled on a set-up thread (its first iterations); its measured
P and E (with margins) and its T then go to the driver, which admits it to a lane (Algorithm
2.1, the admission queue) and, at every iteration boundary, asks the policy which job's next
iteration runs on each lane. The driver runs on an `AsyncioClock` over this loop; iterations
run on the lanes' threads and their results hop back with `call_soon_threadsafe`, so the driver
and the policy are only ever called from the loop's thread. A job that fails (its step raised,
it leaked, it overran its profile) is removed from the driver at once; the others go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch

from kairos.decisions import Recorder
from kairos.salus.decisions import Grant, Launch
from kairos.salus.driver import Driver
from kairos.salus.policies import make_policy
from kairos.salus.policy import JobState, JobStatus
from kairos.salus.profile import Profile
from kairos.salus.runtime.device import Device, make_device
from kairos.salus.runtime.host_cache import cache_host_memory
from kairos.salus.runtime.job import FactoryError, check_options, load_factory
from kairos.salus.runtime.lanes import IterationRun, LaneThreads
from kairos.salus.runtime.session import Session
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobRecord, JobSpec, State
from kairos.sim import AsyncioClock

__all__ = ["JobEnded", "SalusService", "Unavailable"]


_OPEN = (JobStatus.QUEUED, JobStatus.ADMITTED)


class JobEnded(RuntimeError):
    """An auxiliary call asked of (or pending on) a job that has ended."""


class Unavailable(RuntimeError):
    """The service is not running (starting or stopping)."""


class SalusService:
    """Jobs in, iterations out. Use from the event loop's thread (the HTTP handlers)."""

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        device: Device | None = None,
        *,
        record: bool = False,
        recorder: Recorder | None = None,
    ) -> None:
        """`record` keeps the driver's timeline of iterations (unbounded: for tests and
        experiments, not for a long-lived server); `recorder` receives the driver's decisions
        (a `DecisionLog` writes them to a file as they are made)."""
        self.settings = settings or ServiceSettings()
        s = self.settings
        self.device = device or make_device(s.device, s.capacity_bytes)
        self.jobs: OrderedDict[int, JobRecord] = OrderedDict()
        self.sessions: dict[int, Session] = {}
        self.iterations = 0
        self.switches = 0
        self.moved_bytes = 0  # state bytes found moved at switches, summed
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clock: AsyncioClock | None = None
        self._lanes: LaneThreads | None = None
        self._setup: ThreadPoolExecutor | None = None
        self._driver: Driver | None = None
        self._on_done: dict[int, Callable[[float], None]] = {}  # lane -> its iteration's end
        self._aux: dict[int, deque[asyncio.Future[bytes]]] = {}  # job -> checkpoints asked
        self._ended: dict[int, asyncio.Event] = {}
        self._running = False
        self._record = record
        self._recorder = recorder
        self.host_cached = False  # glibc keeps freed memory (`host_cache`), once started

    @property
    def policy_name(self) -> str:
        return self.settings.policy

    @property
    def driver(self) -> Driver | None:
        """The decisions' owner (None until started): read-only for callers."""
        return self._driver

    @property
    def running(self) -> bool:
        return self._running

    @property
    def open_jobs(self) -> int:
        return sum(1 for r in self.jobs.values() if not r.state.terminal)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        if self.settings.torch_threads:
            torch.set_num_threads(self.settings.torch_threads)
        if self.settings.host_cache and self.device.kind == "cpu":
            self.host_cached = cache_host_memory(self.device.capacity)
        self._clock = AsyncioClock(loop)
        self._lanes = LaneThreads(
            self.sessions, self._from_lane, self._clock.now, self.settings.switch
        )
        self._setup = ThreadPoolExecutor(1, thread_name_prefix="salus-setup")
        policy = make_policy(self.settings.policy)
        self._driver = Driver(
            self._clock,
            self,
            policy,
            self.device.capacity,
            record=self._record,
            on_finish=self._driver_finished,
            recorder=self._recorder,
        )
        gc.collect()
        gc.freeze()  # a full collection over torch's objects would stall the loop mid-run
        self._running = True

    async def stop(self) -> None:
        """Cancel every open job, let running iterations finish, stop the threads."""
        self._running = False
        for record in list(self.jobs.values()):
            if not record.state.terminal:
                self._end(record, State.CANCELLED, "the service is shutting down")
        if self._setup is not None:
            await asyncio.to_thread(self._setup.shutdown, True, cancel_futures=True)
        if self._lanes is not None:
            await asyncio.to_thread(self._lanes.stop)

    # -- requests -------------------------------------------------------------------------------
    def submit(self, spec: JobSpec) -> JobRecord:
        """Check the factory (allow-list, import, options) and start profiling the job."""
        if not self._running or self._setup is None or self._clock is None:
            raise Unavailable("the Salus service is not running")
        try:
            factory = load_factory(spec.factory, self.settings.allow_modules)
        except FactoryError as exc:
            raise FieldError("factory", str(exc)) from None
        try:
            check_options(factory, spec.kind, dict(spec.options))
        except FactoryError as exc:
            raise FieldError("options", str(exc)) from None
        record = JobRecord(next(self._ids), spec, self._clock.now())
        self.jobs[record.id] = record
        self._ended[record.id] = asyncio.Event()
        session = Session(record.id, self.device, self.settings.account_every)
        self.sessions[record.id] = session
        s = self.settings
        done = self._setup.submit(
            session.setup,
            factory,
            spec.kind,
            dict(spec.options),
            s.warmup,
            s.measured,
            (s.margin_p, s.margin_total),
        )
        done.add_done_callback(lambda f: self._hop(self._profiled, record.id, f))
        self._forget_old()
        return record

    def cancel(self, job_id: int) -> JobRecord:
        record = self.jobs[job_id]
        if not record.state.terminal:
            self._end(record, State.CANCELLED, None)
        return record

    async def checkpoint(self, job_id: int, timeout_s: float) -> bytes:
        """The job's weights (safetensors) at its lane's next boundary: an auxiliary call
        (spec 3.7) that is not charged to the job and changes no scheduling decision.
        `JobEnded` if the job ends first, `TimeoutError` past `timeout_s`."""
        record = self.jobs[job_id]
        if record.state.terminal or self._loop is None:
            raise JobEnded(f"job {job_id} is {record.state.value}")
        asked: asyncio.Future[bytes] = self._loop.create_future()
        self._aux.setdefault(job_id, deque()).append(asked)
        driver = self._driver
        if driver is not None and job_id in driver.jobs:
            driver.aux(job_id)  # a job still profiling asks once it reaches the driver
        try:
            return await asyncio.wait_for(asyncio.shield(asked), timeout_s)
        except TimeoutError:
            asked.cancel()  # the lane skips it when its turn comes
            raise

    async def wait(self, job_id: int, timeout_s: float) -> None:
        """Return once the job ended or after `timeout_s`."""
        event = self._ended.get(job_id)
        if event is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout_s)

    def stats(self) -> dict[str, Any]:
        by_state = Counter(r.state.value for r in self.jobs.values())
        driver = self._driver
        lanes = [
            {"id": lane.id, "size_bytes": lane.size, "jobs": list(lane.jobs), "busy": lane.busy}
            for lane in (driver.manager.lanes if driver else [])
        ]
        return {
            "policy": self.settings.policy,
            "device": self.device.kind,
            "switch": self.settings.switch,
            "capacity_bytes": self.device.capacity,
            "reserved_bytes": driver.manager.layout.committed() if driver else 0,
            "used_bytes": sum(s.tracker.live for s in self.sessions.values()),
            "lanes": lanes,
            "lane_threads": self._lanes.threads if self._lanes else 0,
            "sessions": len(self.sessions),
            "jobs": dict(by_state),
            "iterations": self.iterations,
            "switches": self.switches,
            "moved_bytes": self.moved_bytes,
        }

    # -- from the threads -----------------------------------------------------------------------
    def _hop(self, fn: Any, *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed as the thread finished
                loop.call_soon_threadsafe(fn, *args)

    def _from_lane(self, run: IterationRun) -> None:
        self._hop(self._ran, run)

    def _profiled(self, job_id: int, future: Any) -> None:
        record = self.jobs.get(job_id)
        if record is None or record.state.terminal or self._driver is None:
            return
        exc = future.exception()
        if exc is not None:
            self._end(record, State.FAILED, str(exc))
            return
        session = self.sessions[job_id]
        measured = future.result()
        record.persistent_bytes, record.ephemeral_bytes = session.budget_p, session.budget_e
        record.t_iter_s = measured.t_iter
        record.iterations_done = measured.iterations
        record.service_s = measured.t_iter * measured.iterations
        if record.iterations_done >= record.spec.iterations:
            self._end(record, State.DONE, None)
            return
        record.state = State.QUEUED
        left = record.spec.iterations - record.iterations_done
        expected = record.spec.expected_s
        profile = Profile(
            record.spec.name,
            record.persistent_bytes,
            record.ephemeral_bytes,
            max(measured.t_iter, 1e-9),
            source="measured",
        )
        try:
            self._driver.arrive(
                record.spec.name,
                profile,
                expected=None if expected is None else max(0.0, expected - record.service_s),
                iterations=left,
                ready=left,
                job_id=record.id,
            )
        except ValueError as exc:  # can never fit (P + E > C): say so instead of queuing forever
            self._end(record, State.FAILED, str(exc))
            return
        for _ in self._aux.get(record.id, ()):
            self._driver.aux(record.id)

    def _ran(self, run: IterationRun) -> None:
        """ITERATION_DONE from a lane thread: account it, fail the job if its step did, then
        hand the duration to the driver, which picks the lane's next iteration."""
        record = self.jobs.get(run.job)
        self.iterations += 1
        if run.switched_from is not None:
            self.switches += 1
            self.moved_bytes += run.moved_bytes
            if record is not None and run.switch_gap is not None:
                record.switches.append(run.switch_gap)
                record.moved_bytes = max(record.moved_bytes, run.moved_bytes)
        if record is not None and not record.state.terminal:
            if run.error is not None:
                self._end(record, State.FAILED, run.error)  # leaves at this boundary
            else:
                record.iterations_done += 1
                record.service_s += run.duration
        on_done = self._on_done.pop(run.lane, None)
        if on_done is not None:
            on_done(run.duration)

    # -- the driver's worker ---------------------------------------------------------------------
    def launch(self, run: Launch, on_done: Callable[[float], None]) -> None:
        """Run the job's next iteration on its lane (the driver's decision)."""
        grant = run.grant
        if grant.aux:
            self._launch_aux(grant, on_done)
            return
        record = self.jobs[grant.job]
        if record.state == State.QUEUED:
            record.state = State.RUNNING
            record.started = run.start
        record.lane = grant.lane
        assert self._lanes is not None
        self._on_done[grant.lane] = on_done
        self._lanes.launch(grant.job, grant.lane, grant.size)

    def _launch_aux(self, grant: Grant, on_done: Callable[[float], None]) -> None:
        asked = self._aux[grant.job].popleft()
        session = self.sessions.get(grant.job)
        if asked.done() or session is None or self._lanes is None:  # the caller gave up
            self._hop(on_done, 0.0)
            return
        t0 = time.perf_counter()
        ran = self._lanes.submit(grant.lane, session.checkpoint)

        def finished(f: Future[bytes]) -> None:
            took = time.perf_counter() - t0
            if not asked.done():
                exc = f.exception()
                if exc is not None:
                    asked.set_exception(JobEnded(f"the checkpoint failed: {exc}"))
                else:
                    asked.set_result(f.result())
            on_done(took)

        ran.add_done_callback(lambda f: self._hop(finished, f))

    def release(self, job: JobState) -> None:
        """The job left its lane: drop its program and with it its persistent memory."""
        self._close(job.id)

    def lane_gone(self, lane: int) -> None:
        if self._lanes is not None:
            self._lanes.drop_lane(lane)
        self.device.drop_lane(lane)

    def _driver_finished(self, job: JobState) -> None:
        record = self.jobs.get(job.id)
        if job.status is JobStatus.DONE and record is not None and not record.state.terminal:
            self._end(record, State.DONE, None)

    def _close(self, job_id: int) -> None:
        for asked in self._aux.pop(job_id, ()):
            if not asked.done():
                asked.set_exception(JobEnded(f"job {job_id} ended before its checkpoint"))
        session = self.sessions.pop(job_id, None)
        if session is not None:
            session.close()
        if self._lanes is not None:
            self._lanes.forget(job_id)

    def _end(self, record: JobRecord, state: State, error: str | None) -> None:
        """A job ended: tell the driver (a running iteration is let finish; the driver frees
        the job at its boundary), drop a session the driver never held, wake its waiters."""
        record.state = state
        record.error = error
        record.finished = self._clock.now() if self._clock else record.finished
        driver = self._driver
        driven = driver.jobs.get(record.id) if driver is not None else None
        if driver is not None and driven is not None and driven.status in _OPEN:
            driver.leave(record.id)
        if driven is None or driven.admitted_at is None:
            self._close(record.id)  # still profiling, or queued: no lane holds it
        event = self._ended.pop(record.id, None)
        if event is not None:
            event.set()

    def _forget_old(self) -> None:
        """Keep at most `max_records` finished jobs (the oldest go first)."""
        extra = len(self.jobs) - self.settings.max_records
        for job_id in [j for j, r in self.jobs.items() if r.state.terminal][: max(0, extra)]:
            del self.jobs[job_id]


class FieldError(ValueError):
    """A submission the schema accepted but the service cannot run; names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
