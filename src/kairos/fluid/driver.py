"""The Fluid driver (spec 3.5): the loop around the planners, written once over a clock and a
backend. The simulator is this driver on simulated time with the device model; the local and
Ray runtimes are this driver on the wall clock with real trials.

It acts on two kinds of event (spec 2.3): a new TrialGroup gets StaticFluid widths over the idle
GPUs; freed resources first start queued trials (all groups, FIFO by group, backfill), then each
group with nothing queued is re-spread by DynamicFluid. Resizes take effect at the end of the
trial's current iteration. With `fluid=False` it is the baseline every tuning library runs
today: one trial per GPU, FIFO, never resized. Its decisions (launches, resizes, stops) are
plain records (`kairos.fluid.decisions`) that an optional recorder receives, with each
iteration's measured outcome, as they are made.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

from kairos.decisions import Recorder
from kairos.fluid.backend import Backend, Outcome
from kairos.fluid.core.dynamic import dynamic_fluid
from kairos.fluid.core.model import Limits, PlanTrial
from kairos.fluid.core.placement import Placer, Waiting, start_queued
from kairos.fluid.core.profiler import ema, per_gpu_time
from kairos.fluid.core.static import static_fluid
from kairos.fluid.decisions import Launch, Measured, Resize, Stop, devices
from kairos.fluid.trial import State, Trial, TrialSpec
from kairos.fluid.tuner import Tuner
from kairos.sim import Timers


@dataclass(frozen=True)
class DriverConfig:
    """`limits`, `alpha`, `beta` come from the profiler; `eps` is the resize cost the planner
    assumes; `t1_prior` the per-iteration time assumed before any trial has been measured."""

    limits: Limits = field(default_factory=Limits)
    alpha: float = 1.0
    beta: float = 1.0
    eps: float = 10.0
    fluid: bool = True
    dynamic: bool = True
    fifo: bool = False  # queue in submission order instead of longest work first
    t1_prior: float = 1.0
    target: float | None = None  # stop the whole run once a metric reaches it

    @staticmethod
    def baseline(target: float | None = None) -> DriverConfig:
        return DriverConfig(fluid=False, dynamic=False, target=target)


@dataclass
class RunStats:
    time_to_target: float | None = None
    best: float = float("-inf")
    best_trial: str | None = None
    iterations: int = 0
    resizes: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    end: float = 0.0


class Driver:
    """Implements `TuningAPI` for the tuner it runs."""

    def __init__(
        self,
        clock: Timers,
        backend: Backend,
        n_gpus: int,
        config: DriverConfig,
        tuner: Tuner,
        on_result: Callable[[Trial, float], None] | None = None,
        *,
        recorder: Recorder | None = None,
    ) -> None:
        self.clock = clock
        self.backend = backend
        self.config = config
        self.limits = config.limits if config.fluid else Limits()
        self.placer = Placer(n_gpus, self.limits.c)
        self.tuner = tuner
        self.trials: dict[str, Trial] = {}
        self.groups: list[list[str]] = []
        self.queue: dict[str, Waiting] = {}
        self.stats = RunStats()
        self._on_result = on_result
        self._recorder = recorder
        self._seq = 0
        self._halted = False

    # ---- TuningAPI -------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now()

    def submit_group(self, trials: Sequence[TrialSpec]) -> int:
        self.groups.append([])
        group = len(self.groups) - 1
        self._admit(group, trials)
        return group

    def add_to_group(self, group: int, trials: Sequence[TrialSpec]) -> None:
        self._admit(group, trials)

    def stop(self, trial_id: str) -> None:
        trial = self.trials[trial_id]
        if trial.state in (State.QUEUED, State.RUNNING):
            self._leave(trial, State.STOPPED)

    # ---- the loop --------------------------------------------------------------------------
    def start(self) -> None:
        self.tuner.start(self)

    def idle(self) -> bool:
        return not self.queue and not any(t.state is State.RUNNING for t in self.trials.values())

    def _admit(self, group: int, specs: Sequence[TrialSpec]) -> None:
        if self._halted:
            return
        fresh = []
        for spec in specs:
            trial = self.trials.get(spec.trial_id)
            if trial is None:
                trial = Trial(spec, group, done=spec.resume_at)
                self.trials[spec.trial_id] = trial
            elif trial.state in (State.QUEUED, State.RUNNING):
                raise ValueError(f"trial {spec.trial_id} is already live")
            elif spec.budget <= trial.done:
                raise ValueError(f"trial {spec.trial_id} has done {trial.done} >= {spec.budget}")
            else:  # promoted: resumes from its checkpoint with a larger budget
                trial.spec, trial.group, trial.state = spec, group, State.QUEUED
            self.groups[group].append(spec.trial_id)
            fresh.append(trial)
        plan = [self._plan_trial(t) for t in fresh]
        if self.config.fluid:
            widths = static_fluid(plan, self.placer.idle(), self.limits)
        else:
            widths = {p.trial_id: Fraction(1) for p in plan}
        for p in plan:
            self._seq += 1
            fifo = self.config.fifo or not self.config.fluid
            order = float(-self._seq) if fifo else p.h1
            self.queue[p.trial_id] = Waiting(group, order, p.trial_id, widths[p.trial_id])
        self._start_queued()

    def _start_queued(self) -> None:
        for placement in start_queued(self.placer, list(self.queue.values()), now=self.now()):
            trial = self.trials[placement.trial_id]
            del self.queue[trial.trial_id]
            trial.placement, trial.width, trial.state = placement, placement.width, State.RUNNING
            trial.history.append((self.now(), trial.width))
            if self._recorder is not None:
                self._recorder.record(self.now(), Launch(trial.trial_id, devices(placement)))
            self._run(trial)

    def _run(self, trial: Trial) -> None:
        self.backend.run_iteration(trial, partial(self._iteration_end, trial))

    def _iteration_end(self, trial: Trial, outcome: Outcome) -> None:
        if self._recorder is not None:
            seen = Measured.of(trial.trial_id, outcome.duration, outcome.metric, outcome.error)
            self._recorder.record(self.now(), seen)
        if trial.state is not State.RUNNING:
            return  # stopped while its last iteration was in flight
        if outcome.error is not None:
            trial.error = outcome.error
            self.stats.failures[trial.trial_id] = outcome.error
            self._leave(trial, State.STOPPED)
            return
        measured = per_gpu_time(outcome.duration, trial.width, self.config.alpha, self.config.beta)
        trial.t1 = ema(trial.t1, measured)
        trial.done += 1
        self.stats.iterations += 1
        self._record(trial, outcome.metric)
        if self._halted or trial.state is not State.RUNNING:
            return
        self.tuner.on_result(self, trial.trial_id, trial.done, outcome.metric)
        if trial.state is not State.RUNNING:
            return
        if trial.remaining <= 0:
            self._leave(trial, State.DONE)
        elif trial.pending_width is not None:
            self._apply_resize(trial)
        else:
            self._run(trial)

    def _record(self, trial: Trial, metric: float) -> None:
        if self._on_result is not None:
            self._on_result(trial, metric)
        if metric > self.stats.best:
            self.stats.best, self.stats.best_trial = metric, trial.trial_id
        target = self.config.target
        if target is not None and metric >= target and self.stats.time_to_target is None:
            self.stats.time_to_target = self.now()
            self._halt()

    def _halt(self) -> None:
        self._halted = True
        self.queue.clear()
        for t in self.trials.values():
            if t.state is State.RUNNING:
                t.state = State.STOPPED
                if self._recorder is not None:
                    self._recorder.record(self.now(), Stop(t.trial_id, "target"))
                self._release(t)
        self.stats.end = self.now()

    def _leave(self, trial: Trial, state: State) -> None:
        was_running = trial.state is State.RUNNING
        trial.state = state
        if self._recorder is not None:
            reason = "done" if state is State.DONE else "failed" if trial.error else "stopped"
            self._recorder.record(self.now(), Stop(trial.trial_id, reason))
        self.queue.pop(trial.trial_id, None)
        if was_running:
            self._release(trial)
        self.stats.end = max(self.stats.end, self.now())
        self.tuner.on_trial_end(self, trial.trial_id, stopped=state is State.STOPPED)
        if not self._halted:
            self._start_queued()
            self._rebalance()

    def _release(self, trial: Trial) -> None:
        self.placer.release(trial.trial_id)
        trial.placement, trial.pending_width = None, None
        self.backend.release(trial)

    # ---- DynamicFluid ----------------------------------------------------------------------
    def _rebalance(self) -> None:
        if not (self.config.fluid and self.config.dynamic):
            return
        promised = Fraction(0)
        for group, ids in enumerate(self.groups):
            if any(self.queue[i].group_order == group for i in self.queue):
                continue
            running = [self.trials[i] for i in ids if self.trials[i].state is State.RUNNING]
            running = [t for t in running if t.pending_width is None and t.remaining > 0]
            if not running:
                continue
            idle = self.placer.idle() - int(promised)
            plan = [self._plan_trial(t) for t in running]
            widths = {t.trial_id: t.width for t in running}
            for r in dynamic_fluid(plan, widths, max(idle, 0), self.limits, self.config.eps):
                self.trials[r.trial_id].pending_width = r.new
                if r.new > r.old:
                    promised += r.new - (r.old if r.old >= 1 else 0)

    def _apply_resize(self, trial: Trial) -> None:
        new, old = trial.pending_width, trial.placement
        assert new is not None and old is not None
        trial.pending_width = None
        self.placer.release(trial.trial_id)
        end = self.now() + (trial.t1 or self.config.t1_prior) * trial.remaining
        placement = self.placer.place(trial.trial_id, new, end)
        if placement is None:  # the GPUs went to someone else meanwhile: keep the old width
            placement = self.placer.place(trial.trial_id, old.width, end)
            assert placement is not None, "re-placing a trial where it just was must succeed"
        trial.placement, trial.width = placement, placement.width
        if self._recorder is not None and (placement.gpus, placement.width) != (
            old.gpus,
            old.width,
        ):
            self._recorder.record(
                self.now(), Resize(trial.trial_id, devices(old), devices(placement))
            )
        if placement.gpus == old.gpus:
            self._run(trial)
            return
        trial.history.append((self.now(), trial.width))
        self.stats.resizes += 1
        self.backend.resize(trial, old, partial(self._resized, trial))

    def _resized(self, trial: Trial) -> None:
        if trial.state is State.RUNNING:
            self._run(trial)

    def _plan_trial(self, trial: Trial) -> PlanTrial:
        return PlanTrial(
            trial.trial_id,
            trial.remaining * self._t1(trial),
            self.config.alpha,
            self.config.beta,
        )

    def _t1(self, trial: Trial) -> float:
        if trial.t1 is not None:
            return trial.t1
        group = [self.trials[i].t1 for i in self.groups[trial.group]]
        known = [t for t in group if t is not None] or [
            t.t1 for t in self.trials.values() if t.t1 is not None
        ]
        return statistics.median(known) if known else self.config.t1_prior
