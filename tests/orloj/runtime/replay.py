"""Recording a real Orloj run's inputs at its driver, and replaying them through the
simulator's driver on a `SimClock`.

The driver decides from its inputs and the clock reading it handles each one at: an arrival,
a worker's result, a wake-up timer, the profiler's tick. `Tap` sits on a real driver's clock
and notes each input with that reading, read once per input (a simulated clock does not move
while an event is handled; the wall clock would move a few microseconds between two readings
of one event, which no decision depends on), and numbers them in the order they were handled:
an event loop's clock may read the same for several (uvloop's ticks in milliseconds, once per
loop iteration). `replay` hands the same inputs to a fresh driver on simulated time at the
same readings, in the same order: arrivals when the real driver took them, each batch's
result (its measured start and end) when the real one came back, each timer and tick when the
real one fired (a wall clock's timer fires late by the event loop's latency). A batch the real
run never ran has no measured time: it never ends, and the replay decides no further.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kairos.decisions import Entries
from kairos.orloj.driver import Driver
from kairos.orloj.policy import Batch, BatchPolicy, Request
from kairos.orloj.profiler import Profiler
from kairos.orloj.worker import BatchRun, Delivery, SoloRun
from kairos.sim import EventLoop, SimClock, Timers


@dataclass
class Timer:
    """One `call_at` the driver made: its callback, the time asked for, when it fired (None:
    it was cancelled, or was still pending when the run ended)."""

    name: str
    at: float
    fired: float | None = None
    seq: int = -1  # its place among the inputs


@dataclass
class Inputs:
    """A real driver's inputs, each with the clock reading it was handled at (seconds)."""

    arrivals: list[tuple[float, int, Request]] = field(default_factory=list)
    batches: dict[tuple[int, ...], tuple[float, int, BatchRun]] = field(default_factory=dict)
    solos: dict[int, tuple[float, int, SoloRun]] = field(default_factory=dict)
    timers: list[Timer] = field(default_factory=list)
    shadow_profiling: bool = False

    @property
    def last(self) -> float:
        """The reading of the last input."""
        return max(
            [t for t, _, _ in self.arrivals]
            + [t for t, _, _ in (*self.batches.values(), *self.solos.values())]
            + [x.fired for x in self.timers if x.fired is not None]
        )


class Tap:
    """Installed on a started driver before its first input: it then notes every input."""

    def __init__(self, driver: Driver) -> None:
        self.inner: Timers = driver.clock
        self.inputs = Inputs(shadow_profiling=driver.worker.shadow_profiling)
        self._reading: float | None = None
        self._handled = 0
        arrive, on_result = driver.arrive, driver.on_result

        def arrived(r: Request) -> None:
            t, seq = self._handle(arrive, r)
            copy = Request(r.request_id, r.app, r.release, r.slo, cost_steps=r.cost_steps)
            self.inputs.arrivals.append((t, seq, copy))

        def returned(result: BatchRun | SoloRun) -> None:
            t, seq = self._handle(on_result, result)
            if isinstance(result, SoloRun):
                self.inputs.solos[result.request.request_id] = (t, seq, result)
            else:
                ids = tuple(r.request_id for r in result.batch.requests)
                self.inputs.batches[ids] = (t, seq, result)

        driver.clock = self
        driver.arrive = arrived  # type: ignore[method-assign]
        driver.on_result = returned  # type: ignore[method-assign]

    def _handle(self, fn: Callable[..., Any], *args: Any) -> tuple[float, int]:
        t = self._reading = self.inner.now()
        seq, self._handled = self._handled, self._handled + 1
        try:
            fn(*args)
        finally:
            self._reading = None
        return t, seq

    def now(self) -> float:
        return self.inner.now() if self._reading is None else self._reading

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> Any:
        timer = Timer(fn.__name__, t)
        self.inputs.timers.append(timer)

        def fire() -> None:
            timer.fired, timer.seq = self._handle(fn, *args)

        return self.inner.call_at(t, fire)

    def cancel(self, handle: Any) -> None:
        self.inner.cancel(handle)

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        self.inner.call_soon_threadsafe(fn, *args)


NEVER = object()  # the handle of a timer that never fires


class ReplayClock(SimClock):
    """Simulated time whose n-th timer fires when the real run's n-th fired, or never if that
    one never did; a timer unlike the real one (another time, another callback: the replay
    has diverged) fires when it asks to. `at` schedules an input at its reading and place."""

    def __init__(self, loop: EventLoop, timers: list[Timer]) -> None:
        super().__init__(loop)
        self._timers, self._next = timers, 0

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> Any:
        real = self._timers[self._next] if self._next < len(self._timers) else None
        self._next += 1
        if real is None or (real.name, real.at) != (fn.__name__, t):
            return super().call_at(t, fn, *args)
        if real.fired is None:
            return NEVER  # a handle all the same: the driver keeps it, as it kept the real one
        return self.at(real.fired, real.seq, fn, *args)

    def at(self, t: float, seq: int, fn: Callable[..., Any], *args: Any) -> Any:
        return self.loop.call_at(max(t, self.loop.now), fn, *args, priority=seq)

    def cancel(self, handle: Any) -> None:
        if handle is not NEVER:
            super().cancel(handle)


class ReplayWorker:
    """Hands each batch back when the real one came back, with its measured start and end."""

    def __init__(self, clock: ReplayClock, inputs: Inputs) -> None:
        self.clock, self.inputs = clock, inputs
        self.shadow_profiling = inputs.shadow_profiling
        self.deliver: Delivery = lambda _run: None

    def submit(self, batch: Batch, not_before_ms: float = -math.inf) -> None:
        real = self.inputs.batches.get(tuple(r.request_id for r in batch.requests))
        if real is None:
            return  # never ran for real: nothing says how long it takes
        t, seq, run = real
        outputs: list[dict[str, Any]] | None = None
        if run.outputs is not None:
            outputs = [{} for _ in batch.requests]
        mine = BatchRun(batch, run.start_ms, run.end_ms, outputs, run.rejected, run.error,
                        run.solo_ms)  # fmt: skip
        self.clock.at(t, seq, self.deliver, mine)

    def submit_solo(self, request: Request) -> None:
        real = self.inputs.solos.get(request.request_id)
        if real is not None:
            t, seq, run = real
            self.clock.at(t, seq, self.deliver, SoloRun(request, run.solo_ms, run.error))


def replay(
    inputs: Inputs,
    policy: BatchPolicy,
    offline: dict[str, list[float]] | None,
    profiler: Profiler,
) -> Entries:
    """The decisions the simulator's driver makes on `inputs` under `policy`."""
    loop = EventLoop(start=min([0.0, *(t for t, _, _ in inputs.arrivals)]))
    clock = ReplayClock(loop, inputs.timers)
    worker = ReplayWorker(clock, inputs)
    decisions = Entries()
    driver = Driver(policy, clock, worker, profiler, recorder=decisions)
    worker.deliver = driver.on_result
    driver.warm_start(offline)
    for t, seq, r in inputs.arrivals:
        copy = Request(r.request_id, r.app, r.release, r.slo, cost_steps=r.cost_steps)
        clock.at(t, seq, driver.arrive, copy)
    loop.run(until=inputs.last)  # past its last input the real driver decided nothing more
    return decisions
