"""Small experiments: the toy example (Fig. 4.3), the ILP oracle, and Fig. 4.5's breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

import kairos.venn.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import save_line_plot
from kairos.venn.ilp import solve_irs_ilp
from kairos.venn.policies import make_policy
from kairos.venn.replay import OneShotJob, acquisition_times, mean_delay

KEYBOARD, EMOJI = 0, 1


def toy_instance() -> tuple[list[OneShotJob], list[float], list[int]]:
    """Figure 4.3 as spec §3.9 reconstructs it: one Keyboard job of 3, two Emoji jobs of 4;
    a device per time unit, Emoji-eligible (and Keyboard) at odd t, Keyboard-only at even t."""
    jobs = [OneShotJob("1", KEYBOARD, 3), OneShotJob("2", EMOJI, 4), OneShotJob("3", EMOJI, 4)]
    times = [float(t) for t in range(1, 25)]
    atoms = [0b11 if t % 2 else 0b01 for t in range(1, 25)]
    return jobs, times, atoms


class ToyConfig(BaseModel):
    random_draws: int = 10_000


@experiment(
    "venn",
    "toy",
    "Toy example: Venn 9.33 vs SRSF 11 (Figure 4.3)",
    ToyConfig,
    {"random_draws": 1000},
)
def toy(cfg: ToyConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    jobs, times, atoms = toy_instance()
    rows: list[dict[str, Any]] = []
    for name in ("venn", "srsf", "fifo"):
        done = acquisition_times(make_policy(name), jobs, times, atoms)
        rows.append(
            {
                "policy": name,
                "avg_jct": mean_delay(done, jobs),
                **{f"job{j.job_id}": done[j.job_id] for j in jobs},
            }
        )
    for name, label in (("random-pure", "random-pure (MC mean)"), ("random", "random order (MC)")):
        draws = [
            mean_delay(
                acquisition_times(make_policy(name, np.random.default_rng(s)), jobs, times, atoms),
                jobs,
            )
            for s in range(cfg.random_draws)
        ]
        rows.append({"policy": label, "avg_jct": float(np.mean(draws))})
    elig = np.array([[True, bool(a & 0b10), bool(a & 0b10)] for a in atoms])
    ilp = solve_irs_ilp(times, elig, [j.demand for j in jobs])
    rows.append({"policy": "ILP optimum", "avg_jct": ilp.mean_delay})
    refs = {
        "venn": paper.TOY["venn"],
        "srsf": paper.TOY["srsf"],
        "random-pure (MC mean)": paper.TOY_RANDOM_MC_MEAN,
        "random order (MC)": paper.TOY_RANDOM_ORDER_MEAN,
        "ILP optimum": paper.TOY["optimal"],
    }
    for r in rows:
        r["paper"] = refs.get(r["policy"], float("nan"))
    publish(ctx, "toy", cfg, rows, "Figure 4.3: toy example (average JCT, time units)")
    save_line_plot(
        ctx.out_dir / "toy.png",
        list(range(len(rows))),
        {"ours": [r["avg_jct"] for r in rows]},
        xlabel=" / ".join(f"{i}={r['policy'].split(' ')[0]}" for i, r in enumerate(rows)),
        ylabel="average JCT (time units)",
        title="Toy example",
        reference={"paper": [r["paper"] for r in rows]},
    )
    return rows


def random_instance(
    rng: np.random.Generator, jobs: int, classes: int, devices: int
) -> tuple[list[OneShotJob], list[float], list[int]]:
    """Single-round jobs at t=0 over `classes` random overlapping requirement groups; devices
    arrive one per time unit with a random atom (each group's bit set with probability 1/2,
    at least one bit)."""
    times = [float(t) for t in range(1, devices + 1)]
    atoms = []
    for _ in range(devices):
        a = 0
        while a == 0:
            a = int(rng.integers(1, 2**classes))
        atoms.append(a)
    groups = rng.integers(0, classes, size=jobs)
    supply = np.array([sum(1 for a in atoms if a >> g & 1) for g in range(classes)])
    per_group = np.bincount(groups, minlength=classes)
    js = []
    for i, g in enumerate(groups):  # half the supply as slack, so every policy finishes
        cap = max(1, int(0.5 * supply[g] / max(per_group[g], 1)), 0)
        cap = min(cap, 20, max(1, devices // (2 * jobs)))
        js.append(OneShotJob(str(i), int(g), int(rng.integers(1, cap + 1))))
    return js, times, atoms


class ILPConfig(BaseModel):
    instances: int = 30
    seed: int = 0
    jobs: tuple[int, int] = (4, 6)  # inclusive ranges, drawn per instance
    classes: tuple[int, int] = (2, 4)
    devices: tuple[int, int] = (60, 150)
    policies: list[str] = ["venn-nomatch", "srsf", "fifo", "random"]


@experiment(
    "venn",
    "ilp",
    "IRS heuristics vs the ILP optimum (spec §6 item 2)",
    ILPConfig,
    {"instances": 8, "devices": (40, 70)},
)
def ilp_oracle(cfg: ILPConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    rng = np.random.default_rng(cfg.seed)
    rows: list[dict[str, Any]] = []
    for k in range(cfg.instances):
        jobs, times, atoms = random_instance(
            rng,
            int(rng.integers(cfg.jobs[0], cfg.jobs[1] + 1)),
            int(rng.integers(cfg.classes[0], cfg.classes[1] + 1)),
            int(rng.integers(cfg.devices[0], cfg.devices[1] + 1)),
        )
        elig = np.array([[bool(a >> j.group & 1) for j in jobs] for a in atoms])
        opt = solve_irs_ilp(times, elig, [j.demand for j in jobs])
        row: dict[str, Any] = {
            "instance": k,
            "jobs": len(jobs),
            "devices": len(times),
            "ilp": opt.mean_delay,
        }
        for name in cfg.policies:
            pol = make_policy(name, np.random.default_rng(k))
            row[name] = mean_delay(acquisition_times(pol, jobs, times, atoms), jobs)
        rows.append(row)
    gaps = {p: float(np.mean([r[p] / r["ilp"] - 1 for r in rows])) for p in cfg.policies}
    means = {p: float(np.mean([r[p] for r in rows])) for p in cfg.policies}
    summary = {f"gap_{p}": g for p, g in gaps.items()} | {f"mean_{p}": v for p, v in means.items()}
    summary["mean_ilp"] = float(np.mean([r["ilp"] for r in rows]))
    summary["target_gap_venn"] = 0.15
    publish(ctx, "ilp", cfg, rows, "Mean scheduling delay: heuristics vs ILP", summary)
    save_line_plot(
        ctx.out_dir / "ilp.png",
        [r["instance"] for r in rows],
        {p: [r[p] / r["ilp"] for r in rows] for p in cfg.policies},
        xlabel="instance",
        ylabel="mean delay / ILP optimum",
        title="IRS heuristics vs the ILP oracle",
    )
    return rows
