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

from kairos.experiments import ExperimentContext, get_experiment, list_experiments
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
    # Venn over SRSF on Even: 1.07x over 10 seeds (paper: 1.11x); see docs/venn.md
    assert 0.9 <= venn / srsf <= 1.2
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
