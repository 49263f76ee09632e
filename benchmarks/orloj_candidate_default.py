"""What making "Orloj at every batch size 1-16 with the quantile:0.9 drop estimate"
the default changed in every finish-rate table the docs report (C.1, C.2, C.3, C.4-C.7).

It is the default now; this script keeps the comparison with the OLD default, named
explicitly (Orloj at Clockwork's S = {1, 2, 4, 8, 16} with the mean drop estimate), every
other system at its own sizes in both (Clockwork S, Clipper and Nexus any size up to 16).
Each table runs its quick workloads and SLOs on identical recordings per seed for five
labels: the three baselines, the old default and the default ("now"/"cand" in the JSON, "old"/"new"
in the printout). Per (table, arrivals, SLO) it reports, each averaged over the
workloads per seed and then paired over the seeds with a 95% CI: default minus old, Orloj
minus the best baseline (the baseline with the highest mean) under each setting, and Orloj /
Clockwork under each (geometric mean of the per-seed ratios). Per workload cell it counts
where the default wins, ties or loses against the old one (CI excluding 0).

    nice -n 10 .venv/bin/python -m benchmarks.orloj_candidate_default -j 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from kairos.experiments import ExperimentContext
from kairos.experiments.registry import get_experiment
from kairos.experiments.seeds import Cell, seed_runs
from kairos.orloj.experiments.point import run_point
from kairos.orloj.experiments.tables import TableConfig
from kairos.report import print_table
from kairos.report.stats import mean_ci, paired_ratio

TABLES = {"C.1": "bimodal", "C.2": "modality", "C.3": "static", "C.4-C.7": "realworld"}
BASELINES = ("clipper", "nexus", "clockwork")
SPEC_SIZES = (1, 2, 4, 8, 16)
CANDIDATE = "orloj"  # the default: every size 1-16, quantile:0.9
OLD = "orloj-S-mean"  # the previous default, named explicitly
LABELS: dict[str, dict[str, Any]] = {
    **{b: {"system": b} for b in BASELINES},
    OLD: {"system": "orloj", "options": {"batch_sizes": SPEC_SIZES, "drop_estimator": "mean"}},
    CANDIDATE: {"system": "orloj"},
}


def _ci(values: np.ndarray) -> tuple[float, float]:
    mean, half = mean_ci(values)
    return float(mean), float(half)


def _verdict(mean: float, half: float) -> str:
    if mean - half > 0:
        return "win"
    if mean + half < 0:
        return "lose"
    return "tie"


def run_table(
    ctx: ExperimentContext,
    table: str,
    arrival: str,
    seeds: list[int],
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Per-seed finish rates of every label on the table's quick cells (`overrides`: e.g. its
    full workload list, other SLOs or more requests), then the summaries."""
    exp = get_experiment("orloj", TABLES[table])
    cfg = exp.config(quick=True, overrides={"arrival": arrival, **(overrides or {})})
    assert isinstance(cfg, TableConfig)
    workloads, mults = list(cfg.workloads), list(cfg.slo_mults)
    base = cfg.base()
    cells = [
        Cell({"workload": w, "slo_mult": m, "label": lab}, {"workload": w, "slo_mult": m, **upd})
        for w in workloads
        for m in mults
        for lab, upd in LABELS.items()
    ]
    groups = seed_runs(ctx, run_point, base, cells, seeds, f"{table} {arrival}")
    fin = {
        tuple(c.labels.values()): np.array([g["finish_rate"] for g in grp])
        for c, grp in zip(cells, groups, strict=True)
    }
    rows, per_cell = [], []
    for m in mults:
        avg = {lab: np.mean([fin[(w, m, lab)] for w in workloads], axis=0) for lab in LABELS}
        best = max(BASELINES, key=lambda b: float(avg[b].mean()))
        row: dict[str, Any] = {"table": table, "arrivals": arrival, "slo": m, "best": best}
        row |= {lab: float(avg[lab].mean()) for lab in LABELS}
        row["cand_minus_now"] = _ci(avg[CANDIDATE] - avg[OLD])
        for tag, lab in (("now", OLD), ("cand", CANDIDATE)):
            row[f"{tag}_minus_best"] = _ci(avg[lab] - avg[best])
            r = paired_ratio(avg[lab], avg["clockwork"])
            row[f"{tag}_over_clockwork"] = (r.geo_mean, r.lo, r.hi)
        rows.append(row)
        for w in workloads:
            d = _ci(fin[(w, m, CANDIDATE)] - fin[(w, m, OLD)])
            below = {  # baselines each Orloj setting is below, CI excluding 0
                tag: [
                    b
                    for b in BASELINES
                    if _verdict(*_ci(fin[(w, m, lab)] - fin[(w, m, b)])) == "lose"
                ]
                for tag, lab in (("now", OLD), ("cand", CANDIDATE))
            }
            per_cell.append(
                {
                    "table": table,
                    "arrivals": arrival,
                    "workload": w,
                    "slo": m,
                    "diff": d,
                    "verdict": _verdict(*d),
                    "below_now": below["now"],
                    "below_cand": below["cand"],
                }
            )
    return {"rows": rows, "cells": per_cell, "seeds": seeds, "workloads": workloads}


def _fmt(ci: tuple[float, ...]) -> str:
    if len(ci) == 2:
        return f"{ci[0]:+.3f} ± {ci[1]:.3f}"
    return f"{ci[0]:.2f} [{ci[1]:.2f}, {ci[2]:.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tables", nargs="*", default=list(TABLES))
    ap.add_argument("--arrivals", nargs="*", default=["bursty", "poisson"])
    ap.add_argument("--slos", nargs="*", type=float, help="SLO multiples (default: quick's)")
    ap.add_argument("--n-requests", type=int, help="requests per run (default: quick's)")
    ap.add_argument("--all-workloads", action="store_true", help="each table's full list")
    ap.add_argument("--tag", default="quick", help="names the JSON file")
    ap.add_argument("--out", type=Path, default=Path("results/orloj/candidate_default"))
    args = ap.parse_args()
    ctx = ExperimentContext(out_dir=args.out, jobs=args.jobs)
    seeds = list(range(args.seeds))

    def overrides(table: str) -> dict[str, Any]:
        upd: dict[str, Any] = {}
        if args.slos:
            upd["slo_mults"] = args.slos
        if args.n_requests:
            upd["n_requests"] = args.n_requests
        if args.all_workloads:
            upd["workloads"] = get_experiment("orloj", TABLES[table]).config().workloads  # type: ignore[attr-defined]
        return upd

    out = [run_table(ctx, t, a, seeds, overrides(t)) for t in args.tables for a in args.arrivals]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"candidate_default_{args.tag}.json").write_text(json.dumps(out, indent=1))
    shown = [
        {
            "table": r["table"],
            "arr": r["arrivals"],
            "slo": r["slo"],
            "old": f"{r[OLD]:.3f}",
            "new": f"{r[CANDIDATE]:.3f}",
            "new-old": _fmt(r["cand_minus_now"]),
            "best": r["best"],
            "old-best": _fmt(r["now_minus_best"]),
            "new-best": _fmt(r["cand_minus_best"]),
            "old/cw": _fmt(r["now_over_clockwork"]),
            "new/cw": _fmt(r["cand_over_clockwork"]),
        }
        for t in out
        for r in t["rows"]
    ]
    print_table(shown, title=f"default vs old default, {len(seeds)} seeds, averages over workloads")
    cells = [c for t in out for c in t["cells"]]
    counts = {v: sum(c["verdict"] == v for c in cells) for v in ("win", "tie", "lose")}
    print(f"per workload cell, default vs old default (S, mean): {counts} of {len(cells)}")
    for c in cells:
        if c["verdict"] != "tie" or c["below_now"] != c["below_cand"]:
            print(
                f"  {c['table']} {c['arrivals']} {c['workload']} {c['slo']}x: {c['verdict']} "
                f"{_fmt(c['diff'])}; below (old) {c['below_now']} (new) {c['below_cand']}"
            )


if __name__ == "__main__":
    main()
