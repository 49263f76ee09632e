"""What is reachable at E4's operating point on prefill-only iterations.

At the load where FCFS's average QoE is the paper's 0.88 on the Azure conversation trace
(Llama-3.1-70B), FCFS loses most of its QoE to streams stalling behind prefill iterations,
and Andes' memory lever never acts. This benchmark runs reference schedulers on the same
iterations (not Andes, not shipped as policies): admission *paced* by the running users'
buffered text (`kairos.andes.policies.pacing`), with the queue in arrival order or shortest
prompt first. If one of them reaches average QoE 0.95, the target of 0.95 is not ruled out
by the regime itself. Seeds draw reading speeds (the trace is the same), so the paired CIs
say how much a result depends on who reads.

It also runs Andes itself: as shipped ("andes", paced by default), without pacing
("andes-unpaced", the paper's), and with paced admission in the orders and aging rules
docs/andes.md compares (`ANDES_PACED`), each paired with FCFS seed by seed (ratios of
average QoE, mean and max TTFT, TDS and the longest-prompt decile's QoE, with 95% CIs; the
share at QoE >= 0.95 as a difference), and names the ones that meet every part of the
operating-point target (average QoE >= 0.95, +15 points at QoE 0.95, lower mean TTFT, TDS
within 10%), and those that also keep max TTFT within 2x FCFS's.

    .venv/bin/python -m benchmarks.bench_andes_reachable [--seeds 0,1,2] [--quick]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kairos.andes.latency import load_profile
from kairos.andes.loss_split import loss_split
from kairos.andes.operating_point import PAPER_FCFS_QOE, find_load
from kairos.andes.policies.pacing import pace_admissions
from kairos.andes.policies.registry import make_policy
from kairos.andes.policy import Decision, SchedulerView, fcfs_order, newest_first
from kairos.andes.simulator import simulate
from kairos.andes.workload import SimPoint, build_trace
from kairos.report import print_table, write_result
from kairos.report.stats import mean_ci, paired_ratio


class PacedQueue:
    """Admit from the queue (arrival order, or shortest context first) only as far as the
    running users' buffers absorb the prefill; preempt newest-first like FCFS."""

    chunked_prefill = False
    chunk_size: int | None = None

    def __init__(self, order: Literal["arrival", "shortest"], margin: float) -> None:
        self.order, self.margin = order, margin
        self.name = f"paced-{order}-{margin:g}"

    def decide(self, view: SchedulerView) -> Decision:
        queue = fcfs_order(view)
        if self.order == "shortest":
            queue.sort(key=lambda r: r.context_len)
        return Decision(admit=pace_admissions(view, queue, self.margin), victims=newest_first(view))


# Andes with buffer-paced admission (`AndesConfig.pacing`) in the orders and aging rules
# docs/andes.md compares against the QoE and TTFT targets: shortest prefill first lowers the
# mean TTFT, an aging rule caps the longest wait, the two pull against each other. Each row
# spells its pacing out whole, so it does not move with the defaults. "andes" (the default,
# bounded overtaking) and "andes-unpaced" (the paper's Andes) run as well.
_BETWEEN = {"margin": 0.65, "order": "shortest", "between_solves": True, "overtake": None}
ANDES_PACED: dict[str, dict[str, Any]] = {
    # the trigger kept, admitting (paced) between solves; aging in TTFT targets past due
    "andes-spf-0.65-age8-between": _BETWEEN | {"starve_after": 8.0},
    "andes-spf-0.65-age6-between": _BETWEEN | {"starve_after": 6.0},
    "andes-spf-0.65-age5-between": _BETWEEN | {"starve_after": 5.0},
    "andes-spf-0.65-between": _BETWEEN,  # no aging rule
    # aging in seconds (the same bound for every prompt length: a bound in TTFT targets ages
    # a long prompt late), overdue prompts added to every admission (a solve that passed one
    # over admitted others into its buffers), and those after the first that fits join it
    "andes-spf-0.65-age8s-always": _BETWEEN | {"starve_after_s": 8.0, "aged_always": True},
    "andes-spf-0.65-age9s-always-together": _BETWEEN
    | {"starve_after_s": 9.0, "aged_always": True, "aged_together": True},
    # bounded overtaking (policies/overtaking.py): overdue once more than 22 later prompts,
    # or 2x the prompts waiting, were admitted first; unlike 9 s it keeps E2's bursts. The
    # default's pacing, spelled out
    "andes-spf-0.65-overtake22": _BETWEEN | {"overtake": 22, "overtake_per_waiting": 2.0},
}
# paired ratios against FCFS, seed by seed: metric -> column
PAIRED = {
    "avg_qoe": "qoe_vs_fcfs",
    "avg_ttft": "ttft_vs_fcfs",
    "ttft_max": "max_ttft_vs_fcfs",
    "avg_tds": "tds_vs_fcfs",
    "qoe_long_prompts": "decile_vs_fcfs",
}


def _andes(pacing: dict[str, Any] | None) -> Any:
    return lambda: make_policy("andes", pacing=pacing)


def _point(load: float, span: float, seed: int) -> SimPoint:
    return SimPoint(
        arrival="azure_trace", dataset="azure", load_factor=load, span_s=span, seed=seed
    )


def _run(policy: Any, point: SimPoint) -> dict[str, Any]:
    trace, speeds = build_trace(point)
    res = simulate(policy, load_profile(point.profile), trace, speeds)
    split = loss_split(res.requests)
    return res.summary() | {"qoe_ttft_only": split.ttft_only, "qoe_stall_only": split.stall_only}


def run(out_dir: Path, quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2)) -> dict[str, Any]:
    span = 600.0 if quick else 1200.0
    seeds = seeds[:1] if quick else seeds
    search = find_load(
        lambda x: float(_run(make_policy("fcfs"), _point(x, span, seeds[0]))["avg_qoe"]),
        PAPER_FCFS_QOE,
    )
    makers: dict[str, Any] = {
        "fcfs": lambda: make_policy("fcfs"),
        "andes": lambda: make_policy("andes"),
        "andes-unpaced": _andes(None),
        "paced-arrival-1": lambda: PacedQueue("arrival", 1.0),
        "paced-shortest-1": lambda: PacedQueue("shortest", 1.0),
        "paced-shortest-0.7": lambda: PacedQueue("shortest", 0.7),
    } | {name: _andes(cfg) for name, cfg in ANDES_PACED.items()}
    runs = {n: [_run(m(), _point(search.load, span, s)) for s in seeds] for n, m in makers.items()}
    keys = ["avg_qoe", "share_qoe_095", "avg_ttft", "ttft_max", "qoe_long_prompts", "avg_tds"]
    keys += ["qoe_ttft_only", "qoe_stall_only"]
    fcfs = runs["fcfs"]
    rows = []
    for name, results in runs.items():
        row: dict[str, Any] = {"policy": name, "load": search.load, "seeds": len(results)}
        row |= {k: float(np.mean([r[k] for r in results])) for k in keys}
        if name != "fcfs":
            for k, label in PAIRED.items():
                pr = paired_ratio([r[k] for r in results], [r[k] for r in fcfs])
                row |= {f"{label}": pr.geo_mean, f"{label}_lo": pr.lo, f"{label}_hi": pr.hi}
            diff = [
                r["share_qoe_095"] - f["share_qoe_095"] for r, f in zip(results, fcfs, strict=True)
            ]
            mean, half = mean_ci(diff)
            row |= {"share_095_minus_fcfs": mean, "share_095_minus_fcfs_ci": half}
        rows.append(row)
    print_table(rows, title=f"E4 operating point (load {search.load:.3g}): what is reachable")
    write_result(out_dir / "andes" / "reachable", "reachable", config={"span": span}, rows=rows)
    best = max(r["avg_qoe"] for r in rows if r["policy"].startswith("paced"))
    # the QoE target: QoE >= 0.95, +15 points, mean TTFT lower, TDS within 10%
    ms2 = [
        r["policy"]
        for r in rows
        if r["policy"].startswith("andes")
        and r["avg_qoe"] >= 0.95
        and r["share_095_minus_fcfs"] >= 0.15
        and r["ttft_vs_fcfs_hi"] < 1.0
        and abs(r["tds_vs_fcfs"] - 1.0) <= 0.1
    ]
    # no starvation on top: max TTFT within 2x, the longest-prompt decile >= 0.9x FCFS's
    by_name = {r["policy"]: r for r in rows}
    both = [
        n
        for n in ms2
        if by_name[n]["max_ttft_vs_fcfs"] <= 2 and by_name[n]["decile_vs_fcfs"] >= 0.9
    ]
    return {
        "andes_reachable_best_paced_qoe": best,
        "andes_reachable_095": int(best >= 0.95),
        "andes_paced_meeting_ms2": ",".join(ms2) or "none",
        "andes_paced_meeting_ms2_and_max_ttft": ",".join(both) or "none",
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("results"))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(run(args.out, args.quick, tuple(int(s) for s in args.seeds.split(","))))
