"""Fluid under Ray Tune: a `TrialScheduler` that wraps any Tune scheduler (ASHA, HyperBand,
PBT, ...) and gives each trial its Fluid width as a placement group.

It builds on Tune's `ResourceChangingScheduler`: the wrapped scheduler still decides which
trials continue; after every result, once no new trial waits to start (the group's tail: a
trial widened earlier would hold devices the queued trials need, or wait for ones they hold),
DynamicFluid decides whether the trial should be wider or narrower, and Tune pauses it and
restores it from its checkpoint with the new placement group (so set `eps` to what a pause and
restore costs, and keep `reuse_actors` off). A width below one is a `1/c` share of one device
bundle, a width of `w` is `w` bundles of one device each.
On a cluster of several nodes a gang that fits one node is kept on one (`width_resources`).
On a host without GPUs the devices are a custom resource, `vgpu` by default: start Ray with
`ray.init(resources={"vgpu": n})`; on a GPU cluster pass `resource="GPU"`.

    fluid = FluidScheduler(ASHAScheduler(max_t=81), devices=8, limits=Limits(c=2, d=4), max_t=81)
    tune.Tuner(tune.with_resources(train_digits, fluid.initial_resources()),
               tune_config=tune.TuneConfig(scheduler=fluid, metric="accuracy", mode="max"))

Inside the trainable, `fluid_width(tune.get_context().get_trial_resources())` is the width.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from ray.tune.execution.placement_groups import PlacementGroupFactory
from ray.tune.schedulers import ResourceChangingScheduler, TrialScheduler

from kairos.fluid.core.dynamic import dynamic_fluid
from kairos.fluid.core.model import Limits, PlanTrial, Width, water_fill
from kairos.fluid.core.profiler import ema, per_gpu_time
from kairos.runtime.ports import free_port


def width_resources(
    width: Width, resource: str = "vgpu", cpus: float = 1.0, node_devices: int | None = None
) -> PlacementGroupFactory:
    """A trial of `width` as a placement group: one bundle (a `1/c` share, or one device), or a
    gang of `w` one-device bundles. A gang that fits on one node (`w <= node_devices`; `None`:
    assume it does) is `STRICT_PACK`: Ray's `PACK` is best-effort and splits the gang over
    nodes that each have a device or two free rather than wait for one node to free `w`, and a
    gang's all-reduce across nodes runs at network speed instead of the node's interconnect
    (and `TrialGang` joins its ranks on the trial's own host). A gang wider than every node
    must span nodes: `PACK`, the fewest it can."""
    if width < 1:
        return PlacementGroupFactory([{"CPU": cpus, resource: float(width)}])
    w = int(width)
    fits = node_devices is None or w <= node_devices
    strategy = "STRICT_PACK" if w >= 2 and fits else "PACK"
    return PlacementGroupFactory([{"CPU": cpus, resource: 1.0}] * w, strategy=strategy)


def largest_node(nodes: list[dict[str, Any]], resource: str) -> int:
    """The most `resource` devices one live node of `ray.nodes()` has: the widest gang that
    can stay on one node."""
    alive = [n for n in nodes if n.get("Alive")]
    return max((int(n.get("Resources", {}).get(resource, 0)) for n in alive), default=0)


def fluid_width(resources: PlacementGroupFactory, resource: str = "vgpu") -> Fraction:
    total = sum(float(b.get(resource, 0.0)) for b in resources.bundles)
    return Fraction(total).limit_denominator(64)


class _Allocation:
    """Tune sets `metric` and `mode` on its allocation function, so it must be an object."""

    metric: str | None = None
    mode: str | None = None

    def __init__(self, owner: FluidScheduler) -> None:
        self.owner = owner

    def __call__(self, controller: Any, trial: Any, result: dict[str, Any], _s: Any) -> Any:
        return self.owner._allocate(controller, trial, result)


class FluidScheduler(ResourceChangingScheduler):
    def __init__(
        self,
        base_scheduler: TrialScheduler,
        devices: int,
        limits: Limits,
        max_t: int,
        eps: float = 10.0,
        alpha: float = 1.0,
        beta: float = 1.0,
        concurrency: int | None = None,
        resource: str = "vgpu",
        cpus_per_bundle: float = 1.0,
        iteration_key: str = "training_iteration",
    ) -> None:
        super().__init__(base_scheduler, _Allocation(self))
        self.devices, self.limits, self.max_t, self.eps = devices, limits, max_t, eps
        self.alpha, self.beta = alpha, beta  # Eq. 3.2's overheads, from Fluid's profiler
        self.concurrency = concurrency or devices * limits.c
        self.resource, self.cpus = resource, cpus_per_bundle
        self.iteration_key = iteration_key
        self.t1: dict[str, float] = {}
        self.done: dict[str, int] = {}
        self.decisions: list[dict[str, Any]] = []  # every width Fluid set, in order
        self.node_devices: int | None = None  # the largest node's, read at the first trial
        self._checked = False

    def check_cluster(self, resources: Mapping[str, float]) -> None:
        """Tune waits forever for a placement group the cluster cannot hold, without a word,
        so a cluster with fewer `resource` devices than Fluid plans over is refused at the
        first trial, with the `ray.init` that fixes it."""
        have = float(resources.get(self.resource, 0.0))
        if have >= self.devices:
            return
        fix = (
            "start Ray with ray.init(num_gpus=...) on GPU hosts, or pass devices= what it has"
            if self.resource == "GPU"
            else f"start Ray with ray.init(resources={{{self.resource!r}: {self.devices}}}) "
            f"(CPU-only hosts), or pass resource='GPU' on a GPU cluster"
        )
        raise RuntimeError(
            f"FluidScheduler plans over {self.devices} devices of resource {self.resource!r}, "
            f"but the Ray cluster has {have:g}; Tune would wait forever: {fix}"
        )

    def initial_resources(self) -> PlacementGroupFactory:
        """The resources every trial is created with (Tune needs one shape to start from);
        Fluid replaces them with its StaticFluid width as each trial is added."""
        return width_resources(self.limits.slot, self.resource, self.cpus)

    def _set(self, trial: Any, width: Width, why: str) -> PlacementGroupFactory:
        self.decisions.append(
            {
                "trial": trial.trial_id,
                "iteration": self.done.get(trial.trial_id, 0),
                "width": width,
                "why": why,
            }
        )
        return width_resources(width, self.resource, self.cpus, self.node_devices)

    def on_trial_add(self, tune_controller: Any, trial: Any, **kwargs: Any) -> None:
        if not self._checked:
            import ray

            self.check_cluster(ray.cluster_resources())
            self.node_devices = largest_node(ray.nodes(), self.resource)
            self._checked = True
        super().on_trial_add(tune_controller, trial, **kwargs)
        # StaticFluid before anything is measured: equal work over the live trials it expects
        width = water_fill(1.0, float(self.concurrency), self.devices, self.limits)
        self.set_trial_resources(trial, self._set(trial, width, "static"))

    def _left(self, trial_id: str) -> int:
        return max(self.max_t - self.done.get(trial_id, 0), 0)

    def _allocate(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> Any:
        width = fluid_width(trial.placement_group_factory, self.resource)
        measured = float(result.get("time_this_iter_s") or 0.0)
        if measured > 0:
            self.t1[trial.trial_id] = ema(
                self.t1.get(trial.trial_id), per_gpu_time(measured, width, self.alpha, self.beta)
            )
        self.done[trial.trial_id] = int(result.get(self.iteration_key, 0))
        everyone = list(tune_controller.get_live_trials())
        if any(t.trial_id not in self.t1 and t.status == "PENDING" for t in everyone):
            return None  # trials still queued: DynamicFluid re-spreads only a group's tail
        live = [t for t in everyone if t.trial_id in self.t1]
        known = sorted(self.t1.values())
        median = known[len(known) // 2]
        plan = [
            PlanTrial(
                t.trial_id,
                self._left(t.trial_id) * self.t1.get(t.trial_id, median),
                self.alpha,
                self.beta,
            )
            for t in live
        ]
        plan = [p for p in plan if p.h1 > 0]
        # every live trial holds (or is about to hold) its width, measured or not
        widths = {
            t.trial_id: fluid_width(t.placement_group_factory, self.resource) for t in everyone
        }
        used = sum(widths.values(), Fraction(0))
        idle = max(0, self.devices - int(-(-used // 1)))  # whole devices nobody holds
        for r in dynamic_fluid(
            plan, {p.trial_id: widths[p.trial_id] for p in plan}, idle, self.limits, self.eps
        ):
            if r.trial_id == trial.trial_id:
                return self._set(trial, r.new, "dynamic")
        return None


class TrialGang:
    """Ranks 1..w-1 of a trial's `gloo` data-parallel gang, as Ray actors in the trial's own
    placement-group bundles 1..w-1 (the trainable itself holds bundle 0 and is rank 0), so a
    width of `w` bundles is `w` processes training one model at the same global batch. The
    actors belong to the trial's process: when Tune pauses the trial for a resize, they go
    with it, and the restored trial starts a gang of its new width from the checkpoint (a
    local path: on a multi-node cluster Tune's storage must be shared)."""

    def __init__(
        self, world: int, config: dict[str, Any], ckpt: str | None, resource: str, cpus: float
    ) -> None:

        import ray
        import torch.distributed as dist
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from kairos.fluid.runtime.local import DIGITS
        from kairos.fluid.runtime.trainable import DigitsMLP
        from kairos.fluid.runtime.worker import SlotWorker

        pg = ray.util.get_current_placement_group()
        if pg is None or len(pg.bundle_specs) < world:
            raise RuntimeError(f"a gang of {world} needs the trial's placement group of {world}")
        port = free_port()
        actor = ray.remote(SlotWorker)
        self.actors: list[Any] = [
            actor.options(
                num_cpus=min(cpus, float(pg.bundle_specs[i].get("CPU", 0.0))),
                resources={resource: 1.0},
                scheduling_strategy=PlacementGroupSchedulingStrategy(pg, i),
            ).remote()
            for i in range(1, world)
        ]
        loads = [
            a.handle.remote(("load", DIGITS, config, ckpt, rank, world, port, 0))
            for rank, a in enumerate(self.actors, start=1)
        ]
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=world
        )
        self.model = DigitsMLP(config, 0, world)
        if ckpt is not None:
            self.model.restore(Path(ckpt))
        self._check(ray.get(loads))
        self.placements: list[dict[str, Any]] = [ray.get(a.where.remote()) for a in self.actors]
        self.pg_id = pg.id.hex()

    @staticmethod
    def _check(replies: list[tuple[str, Any]]) -> None:
        errors = [value for status, value in replies if status != "ok"]
        if errors:
            raise RuntimeError(f"a rank of the trial's gang failed: {errors[0]}")

    def step(self) -> float:
        import ray

        pending = [a.handle.remote(("step",)) for a in self.actors]
        metric = self.model.step()
        self._check(ray.get(pending))
        return metric


def train_digits(config: dict[str, Any]) -> None:
    """A Tune function trainable over `DigitsMLP`: one epoch a result, a checkpoint every
    epoch (a Fluid resize is a pause and a restore), and the width Ray actually gave the trial
    in every result (`fluid_width`), read back from its placement group. At a width of two or
    more bundles the epoch runs as a `gloo` gang over that many processes (`TrialGang`);
    `fluid_ranks` says how many ran it."""
    import tempfile

    from ray import tune

    from kairos.fluid.runtime.trainable import DigitsMLP

    resource = str(config.get("resource", "vgpu"))
    granted = fluid_width(tune.get_context().get_trial_resources(), resource)
    model = DigitsMLP(config)
    gang: TrialGang | None = None
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            if granted >= 2:  # the gang's ranks load the checkpoint before this block ends
                gang = TrialGang(int(granted), config, str(Path(d) / "state.pt"), resource, 1.0)
            else:
                model.restore(Path(d) / "state.pt")
    elif granted >= 2:
        gang = TrialGang(int(granted), config, None, resource, 1.0)
    if gang is not None:
        model = gang.model
    inside = all(p["placement_group"] == gang.pg_id for p in gang.placements) if gang else True
    while True:
        accuracy = gang.step() if gang is not None else model.step()
        width = fluid_width(tune.get_context().get_trial_resources(), resource)
        with tempfile.TemporaryDirectory() as d:
            model.save(Path(d) / "state.pt")
            tune.report(
                {
                    "accuracy": accuracy,
                    "fluid_width": float(width),
                    "fluid_ranks": model.world,
                    "fluid_gang_in_trial_group": int(inside),
                    "epoch": model.epoch,
                },
                checkpoint=tune.Checkpoint.from_directory(d),
            )
