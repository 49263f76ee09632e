"""Simulator trends in quick mode (spec 6.5; the full runs are `make bench`): each assertion is
on paired per-seed ratios, so it holds for the seeds named, with the CI printed in the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.experiments import ExperimentContext, get_experiment


def quick(name: str, tmp_path: Path, **overrides: Any) -> Any:
    exp = get_experiment("fluid", name)
    ctx = ExperimentContext(out_dir=tmp_path, progress=False, cache=False)
    return exp.run(exp.config(quick=True, overrides=overrides), ctx)


def test_synchronous_algorithms_gain_most_and_pbt_least(tmp_path: Path) -> None:
    rows = {r["tuner"]: r for r in quick("fig3_7", tmp_path)}
    sync = min(rows["syncbohb"]["speedup"], rows["hyperband"]["speedup"])
    asynchronous = max(rows["asha"]["speedup"], rows["bohb"]["speedup"])
    assert sync > asynchronous
    assert rows["hyperband"]["speedup_lo"] > 1  # resolved on these 4 seeds, not a tie
    assert rows["pbt"]["speedup"] <= min(r["speedup"] for r in rows.values()) + 0.05
    assert all(r["seeds"] == 4 for r in rows.values())


def test_packing_switches_itself_off_at_ten_times_the_overhead(tmp_path: Path) -> None:
    rows = {r["overhead_x"]: r for r in quick("fig3_13a", tmp_path)}
    assert rows[1.0]["c"] > 1 and rows[1.0]["speedup_lo"] > 1
    assert rows[10.0]["c"] == 1
    assert rows[10.0]["speedup"] == pytest.approx(1.0, abs=0.08)  # only the profiling differs
    assert rows[1.0]["speedup"] >= rows[2.0]["speedup"] > rows[10.0]["speedup"]


def test_speedup_grows_with_runtime_variance_and_comes_from_dynamic_fluid(tmp_path: Path) -> None:
    rows = {(r["runtime_cv"], r["engine"]): r["speedup"] for r in quick("fig3_12", tmp_path)}
    assert rows[(1.0, "fluid")] > rows[(0.25, "fluid")]
    assert rows[(1.0, "fluid")] > rows[(1.0, "static-only")] + 0.2


def test_packing_favours_many_small_trials_and_scaling_few_large_ones(tmp_path: Path) -> None:
    rows = {(r["mode"], r["size"], r["configs"]): r for r in quick("fig3_11", tmp_path)}
    assert (
        rows[("packing-only", "small", 81)]["speedup"]
        > rows[("packing-only", "small", 9)]["speedup"]
    )
    assert (
        rows[("packing-only", "small", 81)]["speedup"]
        > rows[("packing-only", "large", 81)]["speedup"]
    )
    assert (
        rows[("scaling-only", "large", 1)]["speedup"]
        > rows[("scaling-only", "small", 1)]["speedup"]
    )
    assert rows[("scaling-only", "large", 1)]["speedup_lo"] > 1


def test_the_proven_bound_holds_on_random_tiny_instances(tmp_path: Path) -> None:
    summary = quick("theory", tmp_path)
    assert summary["bound_held"] == summary["instances"] == 30
    assert summary["ratio_mean"] >= 1.0  # never better than the best list schedule
