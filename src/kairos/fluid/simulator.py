"""The Fluid simulator: the driver on simulated time with a backend that times iterations by
the hidden device model (spec 6.4). Fluid sees only the profiler's noisy estimates (+-5%).

`simulate()` runs one tuning job end to end, with Fluid or with the one-trial-per-GPU baseline,
and reports time-to-target, GPU-seconds and utilisation.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kairos.decisions import Recorder
from kairos.fluid.backend import Outcome
from kairos.fluid.core import profiler
from kairos.fluid.core.gate import Needs, steady_live, what_can_pay
from kairos.fluid.core.model import Limits
from kairos.fluid.core.placement import Placement
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.driver import Driver, DriverConfig, RunStats
from kairos.fluid.trial import Trial
from kairos.fluid.tuner import Tuner
from kairos.fluid.workloads import TrialTruth, Workload
from kairos.sim import EventLoop, SimClock


def _key(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little")


class SimBackend:
    """Times each iteration by who shares the trial's GPU (or its gang width) when it starts,
    charges `resize_cost` per resize, and draws metrics from the trial's learning curve.
    Draws are keyed by (seed, trial, iteration), so Fluid and the baseline see the same
    trials and the same noise."""

    def __init__(
        self,
        clock: SimClock,
        workload: Workload,
        device: DeviceModel,
        seed: int,
        n_gpus: int,
        resize_cost: float = 10.0,
    ) -> None:
        self.clock = clock
        self.workload = workload
        self.device = device
        self.seed = seed
        self.resize_cost = resize_cost
        self.truths: dict[str, TrialTruth] = {}
        self.on_gpu: dict[int, set[str]] = defaultdict(set)
        self.busy = np.zeros(n_gpus)  # busy GPU-seconds, weighted by utilisation
        self.gpu_seconds = 0.0  # GPU-seconds held (a slot holds 1/c of a GPU)
        self._parents: dict[str, tuple[str | None, int]] = {}

    def truth(self, trial: Trial) -> TrialTruth:
        t = self.truths.get(trial.trial_id)
        if t is None:
            rng = np.random.default_rng(_key(self.seed, "truth", sorted(trial.spec.config.items())))
            t = self.truths[trial.trial_id] = self.workload.truth(trial.spec.config, rng)
        return t

    def run_iteration(self, trial: Trial, on_done: Callable[[Outcome], None]) -> None:
        assert trial.placement is not None
        me = self.truth(trial)
        gpus = trial.placement.gpus
        for g in gpus:
            self.on_gpu[g].add(trial.trial_id)
        if trial.width < 1:
            mates = [self.truths[m] for m in self.on_gpu[gpus[0]] if m != trial.trial_id]
            duration = self.device.packed(me, mates)
            self.busy[gpus[0]] += duration * self.device.packed_util(me, mates)
        else:
            w = int(trial.width)
            duration = self.device.gang(me, w) if w > 1 else me.t1
            util = self.device.gang_util(me, w) if w > 1 else me.util
            for g in gpus:
                self.busy[g] += duration * util
        self.gpu_seconds += duration * float(trial.width)
        iteration = trial.done + 1
        noise = np.random.default_rng(_key(self.seed, trial.trial_id, iteration)).normal(
            0.0, self.workload.noise
        )
        metric = me.metric(iteration, self.workload.m0, float(noise))
        self.clock.call_at(self.clock.now() + duration, on_done, Outcome(duration, metric))

    def resize(self, trial: Trial, old: Placement, on_ready: Callable[[], None]) -> None:
        for g in old.gpus:
            self.on_gpu[g].discard(trial.trial_id)
        self.gpu_seconds += self.resize_cost * float(trial.width)
        self.clock.call_at(self.clock.now() + self.resize_cost, on_ready)

    def release(self, trial: Trial) -> None:
        for gpus in self.on_gpu.values():
            gpus.discard(trial.trial_id)


@dataclass(frozen=True)
class SessionProfile:
    """What Fluid's profiler measured before tuning, and what measuring cost."""

    limits: Limits
    alpha: float
    beta: float
    t1_prior: float
    seconds: float
    packing_times: list[float] = field(default_factory=list)
    scaling_times: list[float] = field(default_factory=list)


def profile_session(
    workload: Workload,
    device: DeviceModel,
    seed: int,
    noise: float = 0.05,
    needs: Needs | None = None,
) -> SessionProfile:
    """Spec 3.3 on a typical configuration (the centre of the space): one iteration of p
    co-located copies for p = 1, 2, ... and one at each gang width 1, 2, ..., each series up to
    the first step that no longer pays. Every measurement carries +-`noise` relative error. The
    two series run side by side on different GPUs, so the session pays the longer one; a
    series the plan cannot use (`needs`, core/gate.py) is neither run nor charged, and its
    limit stays 1. The noise of both is drawn either way, so that what one series measures
    does not depend on whether the other ran."""
    needs = needs or Needs(packing=True, scaling=True)
    if not needs.anything:
        raise ValueError("nothing to profile: the plan uses neither packing nor scaling")
    rng = np.random.default_rng(_key(seed, "profile"))
    me = workload.typical()

    def measured(t: float) -> float:
        return t * (1 + rng.uniform(-noise, noise))

    packing = [measured(device.packed(me, [me] * (p - 1))) for p in range(1, profiler.C_MAX + 1)]
    scaling = [measured(device.gang(me, w)) for w in range(1, profiler.W_MAX + 1)]
    c = profiler.packing_limit(packing) if needs.packing else 1
    d = profiler.scaling_limit(scaling) if needs.scaling else 1
    packing = packing[: c + 1] if needs.packing else []
    scaling = scaling[: d + 1] if needs.scaling else []
    return SessionProfile(
        Limits(c=c, d=d),
        profiler.fit_alpha(packing, c),
        profiler.fit_beta(scaling, d),
        (packing or scaling)[0],
        max(sum(packing), sum(scaling)),
        packing,
        scaling,
    )


@dataclass(frozen=True)
class SimResult:
    time_to_target: float | None
    makespan: float
    best: float
    gpu_seconds: float
    utilisation: float  # busy fraction averaged over GPUs and the makespan
    allocation: float  # fraction of GPU-time held by trials (a worker "in use")
    trials: int
    resizes: int
    limits: Limits
    profile_seconds: float
    needs: Needs | None = None  # what the gate found the plan could use (None: no Fluid asked)


def simulate(
    workload: Workload,
    tuner: Tuner,
    n_gpus: int,
    fluid: bool,
    seed: int,
    device: DeviceModel | None = None,
    eps: float = 10.0,
    dynamic: bool = True,
    limits: Limits | None = None,
    to_target: bool = True,
    profile_cost: bool = True,
    fifo: bool = False,
    on_result: Callable[[Trial, float], None] | None = None,
    recorder: Recorder | None = None,
) -> SimResult:
    """One tuning job to its target (or to the tuner's end; with `to_target` False, until
    every trial is done: a group's makespan). `limits` overrides what the profiler picks (the
    ablations: packing only, scaling only). `recorder` receives the driver's decisions.

    With Fluid and no `limits`, the gate (core/gate.py) first decides from the tuner's steady
    live-trial count what the plan can use: when nothing, Fluid runs the baseline schedule and
    profiles nothing, so it cannot be slower; otherwise only the usable series is profiled."""
    device = device or DeviceModel()
    loop = EventLoop()
    clock = SimClock(loop)
    backend = SimBackend(clock, workload, device, seed, n_gpus, resize_cost=eps)
    needs = what_can_pay(n_gpus, steady_live(tuner)) if fluid else None
    if needs is not None and limits is None and not needs.anything:
        fluid = False  # the plan is the baseline's: run it, at no cost
    elif needs is not None and limits is not None:
        needs = Needs(packing=True, scaling=True)  # an ablation fixes the limits itself
    profile = profile_session(workload, device, seed, needs=needs) if fluid and needs else None
    start = profile.seconds if profile and profile_cost else 0.0
    target = workload.target if to_target else None
    if profile is not None:
        chosen = limits or profile.limits
        config = DriverConfig(
            limits=chosen,
            alpha=profile.alpha if chosen.c > 1 else 1.0,
            beta=profile.beta if chosen.d > 1 else 1.0,
            eps=eps,
            dynamic=dynamic,
            t1_prior=profile.t1_prior,
            target=target,
            fifo=fifo,
        )
    else:
        config = DriverConfig.baseline(target=target)
    driver = Driver(clock, backend, n_gpus, config, tuner, on_result, recorder=recorder)
    loop.call_at(start, driver.start)
    loop.run()
    stats: RunStats = driver.stats
    makespan = stats.time_to_target if stats.time_to_target is not None else stats.end
    busy = float(backend.busy.sum())
    return SimResult(
        time_to_target=stats.time_to_target,
        makespan=makespan,
        best=stats.best,
        gpu_seconds=backend.gpu_seconds,
        utilisation=busy / (n_gpus * makespan) if makespan > 0 else 0.0,
        allocation=backend.gpu_seconds / (n_gpus * makespan) if makespan > 0 else 0.0,
        trials=len(driver.trials),
        resizes=stats.resizes,
        limits=config.limits if fluid else Limits(),
        profile_seconds=start,
        needs=needs,
    )
