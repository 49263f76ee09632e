"""The chapter's trends, reproduced in quick mode (full mode: `kairos venn experiment NAME`).

Every experiment runs once per session into one folder, so Tables 4.2/4.3 reuse Table 4.1's
simulations from the sweep cache.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kairos.venn.experiments.paper as paper
from kairos.experiments import ExperimentContext, get_experiment, list_experiments
from kairos.venn.experiments.common import run_grid, speedups
from kairos.venn.experiments.point import VennPoint
from kairos.venn.experiments.scale import synthetic_manager

NAMES = {"toy", "ilp", "fig4_5", "table4_1", "table4_2_3", "table4_4", "fig4_10", "fig4_11",
         "fig4_12", "fig4_13", "fig4_14"}  # fmt: skip


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("venn-experiments")


def run_quick(name: str, out: Path) -> list[dict[str, Any]]:
    exp = get_experiment("venn", name)
    ctx = ExperimentContext(out_dir=out / "venn" / name, jobs=2, progress=False)
    rows: list[dict[str, Any]] = exp.run(exp.config(quick=True), ctx)
    assert (ctx.out_dir / f"{name}.json").is_file() and (ctx.out_dir / f"{name}.csv").is_file()
    assert list(ctx.out_dir.glob("*.png")), f"{name} wrote no plot"
    return rows


def test_every_figure_and_table_is_registered() -> None:
    assert {e.name for e in list_experiments("venn")} == NAMES


def test_toy_experiment_reports_the_paper_numbers(results_dir: Path) -> None:
    rows = {r["policy"]: r for r in run_quick("toy", results_dir)}
    assert rows["venn"]["avg_jct"] == pytest.approx(28 / 3)  # IRS's plan on the toy, exactly
    # each row carries the paper's number for its policy: ours must match it
    assert rows["venn"]["avg_jct"] == pytest.approx(rows["venn"]["paper"], abs=0.01)
    assert rows["srsf"]["avg_jct"] == pytest.approx(rows["srsf"]["paper"])
    assert rows["ILP optimum"]["avg_jct"] == pytest.approx(rows["ILP optimum"]["paper"], abs=0.01)
    assert rows["ILP optimum"]["avg_jct"] == pytest.approx(rows["venn"]["avg_jct"])
    mc = rows["random-pure (MC mean)"]
    assert mc["avg_jct"] == pytest.approx(mc["paper"], abs=0.3)


def test_ilp_experiment_venn_within_15_percent_of_optimum(results_dir: Path) -> None:
    rows = run_quick("ilp", results_dir)
    gap = np.mean([r["venn-nomatch"] / r["ilp"] - 1 for r in rows])
    assert all(r["venn-nomatch"] >= r["ilp"] - 1e-9 for r in rows)  # the oracle is a bound
    assert 0 <= gap <= 0.15
    assert np.mean([r["random"] for r in rows]) > np.mean([r["venn-nomatch"] for r in rows])


def test_fig4_5_scheduling_delay_grows_collection_stays_flat(results_dir: Path) -> None:
    rows = {r["jobs"]: r for r in run_quick("fig4_5", results_dir)}
    sched = [rows[n]["avg_sched"] for n in sorted(rows)]
    collect = [rows[n]["avg_collect"] for n in sorted(rows)]
    assert sched == sorted(sched) and sched[-1] > 5 * sched[0]
    assert max(collect) < 1.5 * min(collect)
    assert sched[-1] > collect[-1]  # with 16 jobs, scheduling dominates the round


def test_table4_1_venn_beats_fifo_and_random_and_matches_srsf(results_dir: Path) -> None:
    rows = {r["policy"]: r for r in run_quick("table4_1", results_dir)}
    venn, srsf, fifo = (rows[p]["speedup"] for p in ("venn", "srsf", "fifo"))
    # the baseline: Random's mean JCT is the longest, and each speed-up is what the JCTs say
    # (a mean of per-seed ratios, so close to the ratio of the means, not equal)
    base = rows["random"]["avg_jct_h"]
    assert base > max(rows[p]["avg_jct_h"] for p in ("venn", "srsf", "fifo"))
    for p in ("venn", "srsf", "fifo"):
        assert rows[p]["speedup"] == pytest.approx(base / rows[p]["avg_jct_h"], rel=0.05), p
    assert venn > fifo > 1.2 and srsf > fifo  # JCT: Venn, SRSF < FIFO < Random
    # ours against the paper's speed-up the row carries (1.87x on Even): within -25% / +34%
    assert 0.75 <= venn / rows["venn"]["paper_speedup"] <= 1.34
    # Venn against SRSF, workload by workload with its CI: the test below
    # every row is a paired summary: geometric mean inside its CI, the seed count, and quick
    # mode's 2 seeds say they cannot resolve a 5% difference
    v = rows["venn"]
    assert v["vs_srsf_lo"] <= v["vs_srsf"] <= v["vs_srsf_hi"] and v["seeds"] == 2
    assert v["speedup_lo"] <= v["speedup"] <= v["speedup_hi"]
    assert not v["resolves_5pct"]
    assert v["vs_srsf"] == pytest.approx(
        rows["srsf"]["avg_jct_h"] / v["avg_jct_h"], rel=0.05
    )  # the paired ratio agrees with the ratio of means up to the seeds' spread


def test_table4_2_3_small_jobs_and_scarce_classes_gain_most(results_dir: Path) -> None:
    (row,) = run_quick("table4_2_3", results_dir)
    assert row["low25"] > row["low50"] > row["low75"] > 1.5
    scarce = ("compute", "memory", "high-perf")
    assert all(row[c] > row["general"] for c in scarce)
    assert row["general"] < 1.3  # General jobs gain least (paper: 0.8-1.5x)
    # IRS protects scarce devices: Venn beats SRSF for the scarce classes, not for General
    assert np.mean([row[c] for c in scarce]) > np.mean([row[f"srsf_{c}"] for c in scarce])
    assert row["general"] < row["srsf_general"]


def _plan_and_dispatch_ms(cases: list[tuple[int, int]], reps: int = 15) -> dict[Any, float]:
    """Median ms of one IRS plan plus one dispatch, as Figure 4.10 times it, for each (jobs,
    groups) case: measured in rounds that time every case once in a rotating order, so other
    work on the machine slows all cases alike and their ratios hold."""
    managers = {c: synthetic_manager(*c, np.random.default_rng([0, *c])) for c in cases}
    times: dict[Any, list[float]] = {c: [] for c in cases}
    for k in range(reps):
        for c in cases[k % len(cases) :] + cases[: k % len(cases)]:
            mgr, atoms = managers[c]
            start = time.perf_counter()
            mgr.replan(3600.0 + k)
            mgr.checkin(3600.0 + k, atoms[k % len(atoms)])
            times[c].append(time.perf_counter() - start)
    return {c: 1e3 * statistics.median(t) for c, t in times.items()}


def test_fig4_10_overhead_grows_gently_with_jobs_and_groups(results_dir: Path) -> None:
    """The figure's experiment runs and reports every cell; its trend is checked on ratios
    measured here (absolute milliseconds, the spec's "stays in milliseconds for m <= 1k,
    n <= 64", are reported by benchmarks/bench_timing_claims.py, not asserted)."""
    rows = run_quick("fig4_10", results_dir)
    assert {(r["jobs"], r["groups"]) for r in rows} == {
        (m, n) for m in (10, 100, 1000) for n in (4, 16, 64)
    }
    assert all(np.isfinite(r["ms"]) and r["ms"] > 0 for r in rows)
    ms = _plan_and_dispatch_ms([(10, 4), (1000, 4), (1000, 64)])
    print(f"\nplan + dispatch, median ms: {ms}")
    # 100x the jobs: no worse than about m log m (measured 11-16x quiet, up to 52x with three
    # busy loops on two cores; quadratic would be 10,000x)
    assert ms[(1000, 4)] < 300 * ms[(10, 4)]
    # 16x the groups (and atoms): less than quadratic (measured 2-8x; quadratic is 256x)
    assert ms[(1000, 64)] < 64 * ms[(1000, 4)]


# "Venn is best in every workload" (docs/venn.md, Table 4.1): SRSF's mean JCT over Venn's,
# paired per seed, at quick scale (half the rounds of full mode) on seeds 1-4. Measured
# (geometric mean [95% CI]): Even 1.047 [0.956, 1.147], Small 1.078 [1.003, 1.159], Large
# 1.111 [1.089, 1.134], Low 1.047 [0.950, 1.154], High 1.132 [1.060, 1.209]; Venn won 19 of
# the 20 (workload, seed) pairs. So everywhere the geometric mean must be above 1 and the CI
# must not lie below 1; on Large and High, which four seeds resolve, the CI must lie above 1
# (Even's 7% lead needs full mode's ten seeds: 1.072 [1.045, 1.100] in the docs).
RESOLVED = ("large", "high")
VS_SRSF_SEEDS = [1, 2, 3, 4]


def venn_vs_srsf(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Venn's row per workload, as Table 4.1 computes it (`vs_srsf`: paired, CI, seeds)."""
    return {r["workload"]: r for r in speedups(runs, ["workload"]) if r["policy"] == "venn"}


def venn_best_failures(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The workloads where the runs contradict "Venn best": a geometric mean of SRSF/Venn at
    or below 1, a CI entirely below 1, or, where the docs call the lead resolved, a CI that
    reaches 1."""
    out = []
    for w in paper.WORKLOADS:
        r = rows[w]
        if not (r["vs_srsf"] > 1 and r["vs_srsf_hi"] > 1):
            out.append(f"{w}: SRSF/Venn {r['vs_srsf']:.3f} [{r['vs_srsf_lo']:.3f}, ...]")
        elif w in RESOLVED and not r["vs_srsf_lo"] > 1:
            out.append(f"{w}: lead not resolved, CI low {r['vs_srsf_lo']:.3f}")
    return out


def slower_venn(runs: list[dict[str, Any]], workload: str, factor: float) -> list[dict[str, Any]]:
    """The mutant: on `workload`, Venn's mean JCT is SRSF's on the same seed times `factor`."""
    srsf = {r["seed"]: r["avg_jct"] for r in runs if r["workload"] == workload
            and r["label"] == "srsf"}  # fmt: skip
    return [
        {**r, "avg_jct": factor * srsf[r["seed"]]}
        if r["workload"] == workload and r["label"] == "venn"
        else r
        for r in runs
    ]


@pytest.mark.slow
def test_venn_beats_srsf_in_every_workload(results_dir: Path) -> None:
    """Twenty runs a policy: 7.7 min beside a load average of 12 on two cores, where Table
    4.1's quick test took 1.9 min. The session's sweep cache is shared with that test."""
    ctx = ExperimentContext(out_dir=results_dir / "venn" / "vs_srsf", jobs=2, progress=False)
    cells = [{"workload": {"workload": w, "round_scale": 0.025}} for w in paper.WORKLOADS]
    policies = {p: {"policy": p} for p in ("srsf", "venn")}
    runs = run_grid(ctx, VennPoint(), cells, policies, VS_SRSF_SEEDS, "venn vs srsf")
    rows = venn_vs_srsf(runs)
    print({w: (round(r["vs_srsf"], 3), round(r["vs_srsf_lo"], 3), round(r["vs_srsf_hi"], 3))
           for w, r in rows.items()})  # fmt: skip
    assert all(r["seeds"] == len(VS_SRSF_SEEDS) for r in rows.values())
    assert venn_best_failures(rows) == []
    # the mutant: a Venn 3% slower than SRSF on Low, seed by seed, fails the same check
    failures = venn_best_failures(venn_vs_srsf(slower_venn(runs, "low", 1.03)))
    assert [f.split(":")[0] for f in failures] == ["low"], failures
