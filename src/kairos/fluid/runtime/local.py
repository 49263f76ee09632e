"""The local backend: the Fluid driver on the wall clock over real trial processes.

`n` virtual devices with `c` slots each, one worker process per slot (`WorkerPool`). A trial
at width 1 or in a slot runs on one worker; a gang of `w` runs on slot 0 of `w` devices as a
`gloo` group. A resize or a release saves the trial's checkpoint and unloads it; the next
launch restores it on its new workers (the trial's model and optimizer state carry over
exactly). With `emulate`, each iteration lasts as long as the device model says (the worker
sleeps the difference): CPU cores are not GPUs, so trend demos on CPU need emulated timing,
and results that use it must say so.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing as mp
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kairos.decisions import Recorder
from kairos.fluid.backend import Outcome
from kairos.fluid.core.placement import Placement
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.driver import Driver, DriverConfig, RunStats
from kairos.fluid.runtime.worker import ProcessHandle, WorkerHandle
from kairos.fluid.trial import Trial
from kairos.fluid.tuner import Tuner
from kairos.fluid.workloads import TrialTruth
from kairos.runtime.ports import free_port
from kairos.sim import AsyncioClock, Timers

Slot = tuple[int, int]
DIGITS = "kairos.fluid.runtime.trainable:DigitsMLP"


class WorkerPool:
    """One worker process per (device, slot); reusable across tuning runs. Start-up (imports,
    and the `warm()` of `factory` if it has one: the data set) is not charged to any run."""

    def __init__(self, n_gpus: int, c: int, factory: str | None = None) -> None:
        ctx = mp.get_context("spawn")
        self.n, self.c = n_gpus, c
        self.workers: dict[Slot, WorkerHandle] = {
            (g, s): ProcessHandle(ctx, f"gpu{g}-slot{s}") for g in range(n_gpus) for s in range(c)
        }
        self._ping(factory)

    def _ping(self, factory: str | None) -> None:
        ready = [threading.Event() for _ in self.workers]
        for w, event in zip(self.workers.values(), ready, strict=True):
            msg = ("ping", factory) if factory else ("ping",)
            w.submit(msg, functools.partial(_set, event))
        if not all(e.wait(120) for e in ready):
            self.close()
            raise RuntimeError("fluid worker processes did not start within 120 s")

    def close(self) -> None:
        for w in self.workers.values():
            w.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True)
class Emulation:
    """Emulated timing: a trial's iteration lasts what `device` says for a trial of `t1`
    seconds alone and `util` of a GPU, given who shares its slot's device."""

    device: DeviceModel
    t1: float
    util: float = 0.5
    steps: int = 100
    params: float = 1e6

    def duration(self, width: float, mates: int) -> float:
        me = TrialTruth(self.t1, self.util, self.params, self.steps, 1.0, 1.0)
        if width < 1:
            return self.device.packed(me, [me] * mates)
        return self.device.gang(me, int(width)) if width > 1 else self.t1


def _set(event: threading.Event, _status: str, _value: Any) -> None:
    event.set()


class LocalBackend:
    def __init__(
        self,
        clock: Timers,
        pool: WorkerPool,
        run_dir: Path,
        factory: str = DIGITS,
        seed: int = 0,
        emulate: Emulation | None = None,
    ) -> None:
        self.clock, self.pool, self.run_dir = clock, pool, run_dir
        self.factory, self.seed, self.emulate = factory, seed, emulate
        run_dir.mkdir(parents=True, exist_ok=True)
        self.members: dict[str, list[Slot]] = {}
        self.owner: dict[Slot, str] = {}
        self.saved: dict[str, threading.Event] = {}
        self.gpu_seconds = 0.0  # device-time held by iterations (a slot holds 1/c)

    def checkpoint(self, trial_id: str) -> Path:
        return self.run_dir / f"{trial_id}.pt"

    def _slots_for(self, placement: Placement) -> list[Slot]:
        if placement.width >= 1:
            return [(g, 0) for g in placement.gpus]
        g = placement.gpus[0]
        return [next((g, s) for s in range(self.pool.c) if (g, s) not in self.owner)]

    def _attach(self, trial: Trial) -> list[Slot]:
        assert trial.placement is not None
        slots = self._slots_for(trial.placement)
        self.members[trial.trial_id] = slots
        for s in slots:
            self.owner[s] = trial.trial_id
        port = free_port() if len(slots) > 1 else 0
        ckpt = str(self.checkpoint(trial.trial_id))
        if trial.spec.parent is not None and not self.checkpoint(trial.trial_id).exists():
            ckpt = str(self.checkpoint(trial.spec.parent))  # PBT: start from the donor
        after = self.saved.get(trial.trial_id)
        for rank, s in enumerate(slots):
            msg = ("load", self.factory, trial.spec.config, ckpt, rank, len(slots), port, self.seed)
            self.pool.workers[s].submit(msg, lambda _st, _v: None, after)
        return slots

    def run_iteration(self, trial: Trial, on_done: Callable[[Outcome], None]) -> None:
        slots = self.members.get(trial.trial_id) or self._attach(trial)
        replies: list[tuple[str, Any]] = []
        lock = threading.Lock()
        mates = sum(1 for s in self.owner if s[0] == slots[0][0]) - 1

        def reply(status: str, value: Any) -> None:
            with lock:
                replies.append((status, value))
                if len(replies) < len(slots):
                    return
            errors = [v for st, v in replies if st != "ok"]
            if errors:
                outcome = Outcome(0.0, error=str(errors[0]))
            else:
                duration = max(v[0] for _, v in replies)
                if self.emulate is not None:
                    target = self.emulate.duration(float(trial.width), mates)
                    time.sleep(max(0.0, target - duration))
                    duration = max(duration, target)
                outcome = Outcome(duration, float(replies[0][1][1]))
                with lock:
                    self.gpu_seconds += duration * float(trial.width)
            self.clock.call_soon_threadsafe(on_done, outcome)

        for s in slots:
            self.pool.workers[s].submit(("step",), reply)

    def _detach(self, trial_id: str, then: Callable[[], None] | None = None) -> None:
        slots = self.members.pop(trial_id, [])
        saved = self.saved[trial_id] = threading.Event()
        for s in slots:
            self.owner.pop(s, None)
        if not slots:
            saved.set()
            if then is not None:
                self.clock.call_soon_threadsafe(then)
            return

        def on_saved(_st: str, _v: Any) -> None:
            saved.set()
            if then is not None:
                self.clock.call_soon_threadsafe(then)

        self.pool.workers[slots[0]].submit(("save", str(self.checkpoint(trial_id))), on_saved)
        for s in slots:
            self.pool.workers[s].submit(("unload",), lambda _st, _v: None)

    def resize(self, trial: Trial, old: Placement, on_ready: Callable[[], None]) -> None:
        self._detach(trial.trial_id, on_ready)

    def release(self, trial: Trial) -> None:
        self._detach(trial.trial_id)


@dataclass(frozen=True)
class LocalRun:
    stats: RunStats
    driver: Driver
    gpu_seconds: float

    @property
    def allocation(self) -> float:
        """Share of the devices' time held by trials over the run."""
        span = self.stats.time_to_target or self.stats.end
        return self.gpu_seconds / (self.driver.placer.n * span) if span > 0 else 0.0


def tune_local(
    tuner: Tuner,
    pool: WorkerPool,
    config: DriverConfig,
    run_dir: Path,
    factory: str = DIGITS,
    emulate: Emulation | None = None,
    timeout_s: float = 600.0,
    recorder: Recorder | None = None,
) -> LocalRun:
    """Run `tuner` to its end (or to `config.target`) on real trials; `recorder` receives
    the driver's decisions and the measured outcomes (the clock starts at 0 with the run)."""

    async def main() -> LocalRun:
        clock = AsyncioClock()
        backend = LocalBackend(clock, pool, run_dir, factory, emulate=emulate)
        driver = Driver(clock, backend, pool.n, config, tuner, recorder=recorder)
        driver.start()
        deadline = time.monotonic() + timeout_s
        while not (driver.idle() and (tuner.finished() or driver.stats.time_to_target is not None)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"tuning did not finish within {timeout_s} s")
            await asyncio.sleep(0.02)
        for event in backend.saved.values():  # checkpoints written before we return
            await asyncio.to_thread(event.wait, 30)
        return LocalRun(driver.stats, driver, backend.gpu_seconds)

    return asyncio.run(main())
