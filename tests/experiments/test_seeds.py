"""The shared seed-averaged sweep and `publish` (`kairos.experiments.seeds`, `.publish`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from kairos.experiments import ExperimentContext
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_average, seed_runs, seed_sweep
from tests.experiments.points import PointConfig, noisy_mean

SEEDS = (1, 2, 3, 4, 5)


def _ctx(tmp_path: Path) -> ExperimentContext:
    return ExperimentContext(out_dir=tmp_path / "out", progress=False, cache=False)


def test_seed_sweep_gives_the_mean_and_95_ci_over_seeds(tmp_path: Path) -> None:
    cells = [Cell({"x": x, "label": f"x={x:g}"}, {"x": x, "n": 50}) for x in (0.0, 3.0)]
    rows = seed_sweep(_ctx(tmp_path), noisy_mean, PointConfig(), cells, SEEDS)
    assert [(r["x"], r["label"], r["seeds"]) for r in rows] == [(0.0, "x=0", 5), (3.0, "x=3", 5)]
    for row in rows:
        per_seed = [noisy_mean(PointConfig(x=row["x"], n=50, seed=s))["mean"] for s in SEEDS]
        lo, hi = sps.t.interval(
            0.95, len(SEEDS) - 1, loc=np.mean(per_seed), scale=sps.sem(per_seed)
        )
        assert row["mean"] == pytest.approx(np.mean(per_seed), rel=1e-12)
        assert row["mean_ci95"] == pytest.approx((hi - lo) / 2, rel=1e-9)
        assert "seed" not in row and "seed_ci95" not in row  # the seed is not a metric
        assert "q" not in row  # lists are not averaged


def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time(tmp_path: Path) -> None:
    """`noisy_mean` estimates x from 20 draws of N(x, 1): over 60 cells of 5 seeds each, the
    95% intervals must hold x in most of them (a 0 or a std in place of the t interval would
    fail this). Deterministic: the seeds fix every draw."""
    xs = [float(i) for i in range(60)]
    cells = [Cell({"x": x}, {"x": x, "n": 20}) for x in xs]
    rows = seed_sweep(_ctx(tmp_path), noisy_mean, PointConfig(), cells, SEEDS, keys=["mean"])
    covered = [abs(r["mean"] - r["x"]) <= r["mean_ci95"] for r in rows]
    assert 0.85 <= np.mean(covered) <= 1.0
    assert set(rows[0]) == {"x", "seeds", "mean", "mean_ci95"}


def test_one_seed_has_a_mean_and_no_interval(tmp_path: Path) -> None:
    rows = seed_sweep(_ctx(tmp_path), noisy_mean, PointConfig(), [Cell({"x": 1.0}, {})], [7])
    assert rows[0]["mean"] == noisy_mean(PointConfig(seed=7))["mean"]
    assert math.isnan(rows[0]["mean_ci95"])
    with pytest.raises(ValueError, match="at least one seed"):
        seed_sweep(_ctx(tmp_path), noisy_mean, PointConfig(), [Cell({})], [])


def test_seed_runs_keep_each_cells_seeds_apart_and_in_order(tmp_path: Path) -> None:
    cells = [Cell({"x": x}, {"x": x, "n": 10}) for x in (1.0, 2.0)]
    groups = seed_runs(_ctx(tmp_path), noisy_mean, PointConfig(), cells, [3, 1])
    want = [[noisy_mean(PointConfig(x=x, n=10, seed=s)) for s in (3, 1)] for x in (1.0, 2.0)]
    assert groups == want


def test_seed_average_treats_bools_as_shares_and_keeps_non_finite() -> None:
    avg = seed_average([{"ok": True, "jct": 2.0}, {"ok": False, "jct": math.inf}])
    assert avg["ok"] == 0.5 and avg["jct"] == math.inf and math.isnan(avg["jct_ci95"])


def test_publish_writes_every_column_and_prints_the_chosen_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"policy": "andes", "qoe": 0.9, "qoe_ci95": 0.01}]
    js, cs = publish(
        _ctx(tmp_path), "e0", PointConfig(), rows, "E0", {"gain": 1.5}, ["policy", "qoe"]
    )
    data = json.loads(js.read_text())
    assert data["rows"] == rows and data["summary"] == {"gain": 1.5}
    assert cs.read_text().splitlines()[0] == "policy,qoe,qoe_ci95"
    out = capsys.readouterr().out
    assert "E0" in out and "summary" in out and "gain" in out and "qoe_ci95" not in out
