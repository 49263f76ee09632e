"""E10 and E11 run the seeds they are given, and E4 runs a load sweep without 1.0.

Once E10 read its seed from `point.seed` (its `seeds` setting was
ignored), E11 had no `seeds` at all (and ran seed 0 whatever `point.seed` said), and E4
crashed drawing its time series when `load_sweep` had no 1.0 (the only load whose runs keep
them). Small runs (60 s of burst) so each test takes seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairos.cli_utils import parse_assignments
from kairos.experiments import ExperimentContext, get_experiment

SHORT = '"span_s": 60.0'


def run(name: str, out: Path, *settings: str) -> list[dict[str, Any]]:
    exp = get_experiment("andes", name)
    cfg = exp.config(quick=True, overrides=parse_assignments(list(settings), "--set"))
    ctx = ExperimentContext(out_dir=out / name, jobs=2, progress=False, cache=False)
    rows: list[dict[str, Any]] = exp.run(cfg, ctx)
    return rows


def qoe(rows: list[dict[str, Any]]) -> list[float]:
    return [float(r["avg_qoe"]) for r in rows]


def test_e10_runs_the_seeds_given_not_the_points_seed(tmp_path: Path) -> None:
    common = ("intensities=[2.0]", f'point={{{SHORT}, "collect": true}}')
    seed0 = run("e10", tmp_path / "a", *common, "seeds=[0]")
    seed1 = run("e10", tmp_path / "b", *common, "seeds=[1]")
    assert qoe(seed0) != qoe(seed1)  # another seed draws another workload
    ignored = run(
        "e10", tmp_path / "c", "intensities=[2.0]", f'point={{{SHORT}, "seed": 1}}', "seeds=[0]"
    )
    assert qoe(ignored) == qoe(seed0)  # the point's own seed is not what runs
    both = run("e10", tmp_path / "d", *common, "seeds=[0, 1]")
    assert {r["seeds"] for r in both} == {2}
    # labels without brackets, which the console table read as markup and dropped
    assert [r["policy"] for r in both] == [
        "fcfs",
        "andes (average)",
        "andes (max_min)",
        "andes (perfect)",
    ]
    for r, a, b in zip(both, seed0, seed1, strict=True):
        assert r["policy"] == a["policy"] == b["policy"]
        assert abs(r["share_perfect"] - (a["share_perfect"] + b["share_perfect"]) / 2) < 1e-12


def test_e11_takes_seeds(tmp_path: Path) -> None:
    common = ("load_factors=[0.2, 0.4]", f"point={{{SHORT}}}")
    seed0 = run("e11", tmp_path / "a", *common, "seeds=[0]")
    seed1 = run("e11", tmp_path / "b", *common, "seeds=[1]")
    assert qoe(seed0) != qoe(seed1)
    both = run("e11", tmp_path / "c", *common, "seeds=[0, 1]")
    assert {r["seeds"] for r in both} == {2}
    for r, a, b in zip(both, seed0, seed1, strict=True):
        assert abs(r["avg_qoe"] - (a["avg_qoe"] + b["avg_qoe"]) / 2) < 1e-12


def test_e4_runs_a_load_sweep_without_the_operating_point(tmp_path: Path) -> None:
    rows = run(
        "e4",
        tmp_path,
        "span_s=120",
        "load_factor=0.9",
        "load_sweep=[0.9, 1.1]",
        "seeds=[0]",
        "starvation_ablation=false",
    )
    assert sorted((r["load_x"], r["policy"]) for r in rows) == [
        (0.9, "andes"),
        (0.9, "fcfs"),
        (1.1, "andes"),
        (1.1, "fcfs"),
    ]
    assert (tmp_path / "e4" / "e4.json").is_file()
    assert (tmp_path / "e4" / "e4_load.png").is_file()
    assert not (tmp_path / "e4" / "e4_waiting.png").exists()  # no series kept off the point
