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
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from kairos.salus.runtime.device import Device, make_device
from kairos.salus.runtime.job import FactoryError, check_options, load_factory
from kairos.salus.runtime.lanes import IterationRun, LaneThreads
from kairos.salus.runtime.scheduling import Scheduling
from kairos.salus.runtime.session import Session
from kairos.salus.runtime.settings import ServiceSettings
from kairos.salus.runtime.spec import JobRecord, JobSpec, State
from kairos.sim import AsyncioClock

__all__ = ["SalusService", "Unavailable"]


class Unavailable(RuntimeError):
    """The service is not running (starting or stopping)."""


class SalusService:
    """Jobs in, iterations out. Use from the event loop's thread (the HTTP handlers)."""

    def __init__(self, settings: ServiceSettings | None = None, device: Device | None = None):
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
        self._sched: Scheduling | None = None
        self._ended: dict[int, asyncio.Event] = {}
        self._running = False

    @property
    def policy_name(self) -> str:
        return self.settings.policy

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
        self._clock = AsyncioClock(loop)
        self._lanes = LaneThreads(
            self.sessions, self._from_lane, self._clock.now, self.settings.switch
        )
        self._setup = ThreadPoolExecutor(1, thread_name_prefix="salus-setup")
        self._sched = Scheduling(self.settings, self.device.capacity, self._clock, self)
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
        session = Session(record.id, self.device)
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

    async def wait(self, job_id: int, timeout_s: float) -> None:
        """Return once the job ended or after `timeout_s`."""
        event = self._ended.get(job_id)
        if event is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout_s)

    def stats(self) -> dict[str, Any]:
        by_state = Counter(r.state.value for r in self.jobs.values())
        lanes = self._sched.lanes() if self._sched else []
        return {
            "policy": self.settings.policy,
            "device": self.device.kind,
            "switch": self.settings.switch,
            "capacity_bytes": self.device.capacity,
            "reserved_bytes": self._sched.reserved() if self._sched else 0,
            "used_bytes": sum(s.tracker.live for s in self.sessions.values()),
            "lanes": lanes,
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
        if record is None or record.state.terminal or self._sched is None:
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
        try:
            self._sched.arrive(record)
        except ValueError as exc:  # can never fit (P + E > C): say so instead of queuing forever
            self._end(record, State.FAILED, str(exc))

    def _ran(self, run: IterationRun) -> None:
        record = self.jobs.get(run.job)
        if self._sched is None:
            return
        self.iterations += 1
        if run.switched_from is not None:
            self.switches += 1
            self.moved_bytes += run.moved_bytes
            if record is not None and run.switch_gap is not None:
                record.switches.append(run.switch_gap)
                record.moved_bytes = max(record.moved_bytes, run.moved_bytes)
        if record is not None and not record.state.terminal:
            if run.error is not None:
                self._end(record, State.FAILED, run.error)
            else:
                record.iterations_done += 1
                record.service_s += run.duration
                if record.iterations_done >= record.spec.iterations:
                    self._end(record, State.DONE, None)
        self._sched.done(run)

    # -- called by the scheduling adapter --------------------------------------------------------
    def launch(self, job_id: int, lane: int, lane_bytes: int) -> None:
        """Run the job's next iteration on `lane` (the driver's decision)."""
        record = self.jobs[job_id]
        if record.state == State.QUEUED:
            record.state = State.RUNNING
            record.started = self._clock.now() if self._clock else record.started
        record.lane = lane
        assert self._lanes is not None
        self._lanes.launch(job_id, lane, lane_bytes)

    def lane_deleted(self, lane: int) -> None:
        if self._lanes is not None:
            self._lanes.drop_lane(lane)
        self.device.drop_lane(lane)

    def _end(self, record: JobRecord, state: State, error: str | None) -> None:
        """A job ended: leave the driver (the lane may be mid-iteration: the driver frees the
        job at that iteration's boundary), drop its session, wake its waiters."""
        record.state = state
        record.error = error
        record.finished = self._clock.now() if self._clock else record.finished
        if self._sched is not None:
            self._sched.leave(record.id)
        session = self.sessions.pop(record.id, None)
        if session is not None:
            session.close()
        if self._lanes is not None:
            self._lanes.forget(record.id)
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
