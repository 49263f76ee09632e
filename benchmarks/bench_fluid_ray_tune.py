"""Fluid's Ray Tune adapter against plain Tune: the same ASHA study with and without
`FluidScheduler` on one local Ray cluster, paired seed by seed, with emulated timing.

The setting is where the source says Fluid helps an asynchronous algorithm: ASHA on 4 devices
with Tune's default concurrency of one trial per device, and a study short enough that its
tail matters. Once ASHA has started its last sample, trials leave (stopped at a rung, or done)
and nothing replaces them, so fewer trials are live than there are devices; plain Tune leaves
those devices idle while the survivors, the ones that reach the target, run on one device each.
Fluid (no packing, `c = 1`: with as many live trials as devices a shared device cannot pay;
scaling up to `d = 4` devices) widens the survivors into the idle devices, paying a pause and a
restore per resize. The workload is the simulator's "wlm" preset (compute-heavy steps: a gang of
4 runs an iteration 3x faster), and Fluid's `beta` and `d` come from profiling its device model
as the simulator does, not from this run (the adapter takes its limits from the caller).

Each trial sleeps its modelled epoch time at the width Ray granted it (`train_emulated`) and
reports the preset's learning curve for its configuration and seed. The scale makes a Tune
result (3 of the preset's iterations) about 1.2 s at width 1 and a trial run to `max_t` about
30 s: long against what a resize costs in Tune here (`eps`: a pause, a new actor and a restore,
several seconds on a busy 2-core host), or DynamicFluid would rightly never widen anything. A
study takes about a minute on such a host, most of it Tune starting trial actors.

Time-to-target is the simulator's definition: wall seconds from the start of `Tuner.fit()`
until some trial first reports the target accuracy, at which point the study stops; a study
that never reaches it counts its whole makespan (as in the simulator's paired cells). Each seed
samples the same configurations on both sides; the two runs of a seed alternate in order so
that the machine's drift does not favour one side. The ratio is plain / Fluid (> 1: Fluid
faster), the geometric mean with a 95% CI over seeds (`paired_ratio`).

    python -m benchmarks.bench_fluid_ray_tune --seeds 5   # results/bench/fluid_ray_tune.json
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from kairos.fluid.core.gate import Needs
from kairos.fluid.core.model import Limits
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.integrations.emulated_trainable import point_of, study_target, train_emulated
from kairos.fluid.simulator import profile_session
from kairos.fluid.workloads import preset
from kairos.report import print_table, write_result
from kairos.report.stats import PairedRatio, paired_ratio


@dataclass(frozen=True)
class Setting:
    workload: str = "wlm"
    devices: int = 4
    samples: int = 9  # configurations ASHA draws; the last one starts the tail
    max_t: int = 27  # Tune iterations (of `stride` workload iterations each)
    stride: int = 3
    grace: int = 1
    eta: int = 3
    scale: float = 0.02  # wall seconds per modelled second
    quantile: float = 0.8  # the target: this quantile of random configurations' final metric
    eps: float = 5.0  # wall seconds a pause and a restore cost in Tune on a busy 2-core host


@dataclass(frozen=True)
class StudyRun:
    seed: int
    fluid: bool
    time_to_target_s: float | None
    makespan_s: float  # Tuner.fit() from start to return
    to_target_s: float  # time-to-target, or the makespan where the target was not reached
    best: float
    trials: int
    resizes: int
    max_width: float
    hit_width: float | None  # the width of the trial that reached the target, as it did
    epochs: list[dict[str, Any]] = field(default_factory=list, repr=False)  # every result

    def wall_over_model(self) -> float:
        """Median over results of the wall seconds an epoch took per modelled second, scaled:
        1 when Tune adds nothing to the sleep, more on a busy host."""
        ratios = sorted(e["wall_s"] / e["scaled_s"] for e in self.epochs if e["scaled_s"] > 0)
        return ratios[len(ratios) // 2] if ratios else math.nan


def limits_for(setting: Setting, seed: int) -> tuple[Limits, float]:
    """`d` and `beta` from profiling the workload's device model (scaling only)."""
    profile = profile_session(
        preset(setting.workload), DeviceModel(), seed, needs=Needs(packing=False, scaling=True)
    )
    return Limits(c=1, d=min(profile.limits.d, setting.devices)), profile.beta


def run_study(setting: Setting, seed: int, fluid: bool, storage: Path) -> StudyRun:
    """One ASHA study on the running Ray cluster, stopped at the target."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, TrialScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator
    from ray.tune.stopper import Stopper

    from kairos.fluid.integrations.ray_tune import FluidScheduler, width_resources

    workload = preset(setting.workload)
    target = study_target(workload, setting.max_t * setting.stride, setting.quantile)

    class AtTarget(Stopper):
        """Stops the study at the first result at or above the target, noting when."""

        def __init__(self) -> None:
            self.start = time.monotonic()
            self.hit: tuple[float, float] | None = None  # (seconds, width)
            self.epochs: list[dict[str, Any]] = []

        def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
            self.epochs.append(
                {
                    "trial": trial_id,
                    "point": point_of(result.get("config", {})),
                    "width": float(result["fluid_width"]),
                    "model_s": float(result["model_s"]),
                    "scaled_s": float(result["model_s"]) * setting.scale,
                    "wall_s": float(result["time_this_iter_s"]),
                }
            )
            if self.hit is None and float(result["accuracy"]) >= target:
                self.hit = (time.monotonic() - self.start, float(result["fluid_width"]))
            return False

        def stop_all(self) -> bool:
            return self.hit is not None

    asha = ASHAScheduler(
        max_t=setting.max_t, grace_period=setting.grace, reduction_factor=setting.eta
    )
    scheduler: TrialScheduler = asha
    resources = width_resources(Fraction(1))
    if fluid:
        limits, beta = limits_for(setting, seed)
        scheduler = FluidScheduler(
            asha, setting.devices, limits, setting.max_t, eps=setting.eps, beta=beta
        )
        resources = scheduler.initial_resources()
    space: dict[str, Any] = {f"x{i}": tune.uniform(0.0, 1.0) for i in range(workload.dims)}
    space |= {"workload": setting.workload, "seed": seed, "scale": setting.scale}
    space |= {"max_t": setting.max_t, "stride": setting.stride}
    stopper = AtTarget()
    tuner = tune.Tuner(
        tune.with_resources(train_emulated, resources),
        param_space=space,
        tune_config=tune.TuneConfig(
            scheduler=scheduler,
            search_alg=BasicVariantGenerator(random_state=seed),
            num_samples=setting.samples,
            metric="accuracy",
            mode="max",
            reuse_actors=False,
        ),
        run_config=tune.RunConfig(storage_path=str(storage), stop=stopper, verbose=0),
    )
    stopper.start = time.monotonic()
    grid = tuner.fit()
    makespan = time.monotonic() - stopper.start
    if grid.errors:
        raise RuntimeError(f"a trial failed: {grid.errors[0]}")
    metrics = [grid[i].metrics or {} for i in range(len(grid))]
    decisions = scheduler.decisions if isinstance(scheduler, FluidScheduler) else []
    widths = [float(d["width"]) for d in decisions] or [1.0]
    return StudyRun(
        seed=seed,
        fluid=fluid,
        time_to_target_s=stopper.hit[0] if stopper.hit else None,
        makespan_s=makespan,
        to_target_s=stopper.hit[0] if stopper.hit else makespan,
        best=max(float(m.get("accuracy", 0.0)) for m in metrics),
        trials=len(metrics),
        resizes=sum(d["why"] == "dynamic" for d in decisions),
        max_width=max(widths),
        hit_width=stopper.hit[1] if stopper.hit else None,
        epochs=stopper.epochs,
    )


def paired(runs: list[StudyRun]) -> PairedRatio:
    """Plain / Fluid time-to-target per seed (the makespan where the target was missed)."""
    plain = {r.seed: r.to_target_s for r in runs if not r.fluid}
    ours = {r.seed: r.to_target_s for r in runs if r.fluid}
    seeds = sorted(plain.keys() & ours.keys())
    return paired_ratio([plain[s] for s in seeds], [ours[s] for s in seeds])


def run_pairs(setting: Setting, seeds: range) -> list[StudyRun]:
    """Both sides of every seed on one local cluster, alternating which goes first."""
    import ray

    ray.init(
        num_cpus=2 * setting.devices,  # logical: a width-4 trial's 4 bundles must not wait on CPU
        resources={"vgpu": setting.devices},
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    runs = []
    try:
        with tempfile.TemporaryDirectory() as d:
            for i, seed in enumerate(seeds):
                for fluid in (False, True) if i % 2 == 0 else (True, False):
                    runs.append(run_study(setting, seed, fluid, Path(d) / f"s{seed}-{fluid}"))
    finally:
        ray.shutdown()
    return runs


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


def run(out_dir: Path, quick: bool = False, seeds: int = 5) -> list[dict[str, Any]]:
    setting = Setting()
    runs = run_pairs(setting, range(2 if quick else seeds))
    ratio = paired(runs)
    rows: list[dict[str, Any]] = []
    for r in runs:
        study = {k: v for k, v in asdict(r).items() if k != "epochs"}
        rows.append(_rounded({"case": "study", **study, "wall_over_model": r.wall_over_model()}))
    by_seed = dict(zip(sorted({r.seed for r in runs}), ratio.ratios, strict=True))
    rows += [
        _rounded({"case": "ratio plain/fluid", "seed": s, "ratio": v}) for s, v in by_seed.items()
    ]
    rows.append(
        _rounded(
            {
                "case": "time-to-target plain/fluid (emulated timing)",
                **ratio.columns("ratio"),
                "reached_plain": sum(r.time_to_target_s is not None for r in runs if not r.fluid),
                "reached_fluid": sum(r.time_to_target_s is not None for r in runs if r.fluid),
                "fluid_widened": sum(r.max_width > 1 for r in runs if r.fluid),
            }
        )
    )
    write_result(out_dir, "fluid_ray_tune", config=asdict(setting) | {"seeds": ratio.n}, rows=rows)
    return rows


if __name__ == "__main__":
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--quick", action="store_true")
    args.add_argument("--seeds", type=int, default=5)
    args.add_argument("--out", type=Path, default=Path("results/bench"))
    a = args.parse_args()
    print_table(run(a.out, quick=a.quick, seeds=a.seeds), title="fluid under Ray Tune")
