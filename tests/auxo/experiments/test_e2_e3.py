"""E2 and E3 in quick mode (200 clients, 150 rounds, 3 paired seeds).

Measured: on the IID and input-shift populations Auxo never split (differences exactly 0);
with FedProx and q-FedAvg Auxo gained +30 points (CI half-width 4-5) on every seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.auxo.experiments import e2, e3
from kairos.experiments import ExperimentContext

QUICK = {"data": {"n_clients": 200}, "rounds": 150}


def _ctx(tmp_path: Path) -> ExperimentContext:
    return ExperimentContext(tmp_path, jobs=2, progress=False, cache=False)


def test_e2_auxo_keeps_one_cohort_or_changes_nothing(tmp_path: Path) -> None:
    cfg = e2.E2Config.model_validate(
        {"seeds": 3, "populations": ("iid", "input_shift"), "point": QUICK}
    )
    rows = e2.e2(cfg, _ctx(tmp_path))["rows"]
    assert [r["population"] for r in rows] == ["iid", "input_shift"]
    for r in rows:
        assert r["seeds"] == 3
        assert r["split_runs"] == 0 or r["within_spread"]
        assert abs(r["d_final_mean"]) <= max(r["base_spread_points"], 1.0)


@pytest.fixture(scope="module")
def e3_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    cfg = e3.E3Config.model_validate(
        {"seeds": 3, "algorithms": ("fedprox", "qfedavg"), "point": QUICK}
    )
    out = e3.e3(cfg, _ctx(Path(tmp_path_factory.mktemp("e3"))))
    return {r["algorithm"]: r for r in out["rows"]}


@pytest.mark.parametrize("alg", ["fedprox", "qfedavg"])
def test_e3_auxo_plus_x_is_at_least_x(e3_rows: dict[str, dict[str, Any]], alg: str) -> None:
    r = e3_rows[alg]
    assert r["d_final_mean_wins"] == 3 and r["d_final_mean"] - r["d_final_mean_ci95"] > 0
    assert r["speedup"] > 1.0 and r["leaves"] >= 2


def test_e3_ftfa_fine_tuning_the_cohort_model_beats_fine_tuning_the_global_one(
    e3_rows: dict[str, dict[str, Any]],
) -> None:
    """Measured (quick, seeds 0-4): FTFA 0.345 -> Auxo + FTFA 0.605, +26.0 +- 2.3 points on
    5/5 seeds; fine-tuning adds +5.3 points to the global model and +0.1 to cohort models."""
    r = e3_rows["ftfa"]
    assert r["d_final_mean_wins"] == 3 and r["d_final_mean"] - r["d_final_mean_ci95"] > 5
    assert r["single_ft_gain"] - r["single_ft_gain_ci95"] > 0
    assert r["single_ft_gain"] > r["auxo_ft_gain"]
