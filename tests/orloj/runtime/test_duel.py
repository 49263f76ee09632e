"""The real-server duel runner (kairos.orloj.runtime.duel), small: two freshly calibrated runs
of a small decoder, the second with CPU-bound neighbours, a result file with each run's
calibration error beside its paired difference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from kairos.orloj.runtime.duel import DuelConfig, main, summarise


def test_the_paired_differences_are_per_run_and_per_load() -> None:
    rows = [
        {"run": run, "load": 0.6, "policy": p, "finish_rate": fr}
        for run, p, fr in (
            (0, "orloj", 0.8),
            (0, "clockwork", 0.7),
            (1, "clockwork", 0.6),
            (1, "orloj", 0.5),
        )
    ]
    s = summarise(rows)["0.6"]
    assert s["diffs"] == pytest.approx([0.1, -0.1]) and s["runs"] == 2
    assert s["mean"] == pytest.approx(0.0) and s["half"] > 0.1
    assert s["quiet"]["runs"] == 2 and "neighbours" not in s  # no run had neighbours


def test_runs_with_and_without_neighbours_are_also_summarised_apart() -> None:
    diffs = {0: 0.10, 1: 0.30, 2: 0.12, 3: 0.26}  # runs 1 and 3 had neighbours
    rows = [
        {"run": run, "load": 0.9, "policy": p, "neighbours": run % 2 == 1, "finish_rate": fr}
        for run, d in diffs.items()
        for p, fr in (("orloj", 0.5 + d), ("clockwork", 0.5))
    ]
    s = summarise(rows)["0.9"]
    assert s["runs"] == 4 and s["mean"] == pytest.approx(0.195)
    assert s["quiet"]["diffs"] == pytest.approx([0.10, 0.12]) and s["quiet"]["runs"] == 2
    assert s["neighbours"]["diffs"] == pytest.approx([0.30, 0.26])
    assert s["neighbours"]["mean"] == pytest.approx(0.28)


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="runs"):
        DuelConfig(runs=1)
    with pytest.raises(ValidationError, match="neighbour_evry"):
        DuelConfig.model_validate({"neighbour_evry": 2})


def test_a_small_duel_writes_every_run_with_its_calibration(tmp_path: Path) -> None:
    out = tmp_path / "duel.json"
    small = {
        "model_options": {"d_model": 64},
        "loads": [0.6],
        "warm_up": 10,
        "batch_reps": 1,
        "neighbour_after_s": 0.0,
    }
    main(["--out", str(out), "--runs", "2", "--requests", "60", "--set", json.dumps(small)])
    result = json.loads(out.read_text())
    # docs quote it through `kairos cite`, which needs the commit and machine it ran on
    assert {"git_revision", "machine", "created_at"} <= set(result["provenance"])
    rows = result["rows"]
    assert [(r["run"], r["neighbours"]) for r in rows] == [(0, False)] * 2 + [(1, True)] * 2
    assert {r["policy"] for r in rows if r["run"] == 1} == {"orloj", "clockwork"}
    assert all(math.isfinite(r["calibration_error"]) for r in rows)
    assert all(math.isfinite(r["holdout_error"]) for r in rows)
    # drift is busy over predicted time, so it exists for a replay that ran batches; one that
    # dropped everything (a policy starved by the neighbours) has none to report
    ran = [r for r in rows if r["batches"] > 0]
    assert {r["policy"] for r in ran} == {"orloj", "clockwork"}
    assert all(r["drift"] is not None and math.isfinite(r["drift"]) and r["drift"] > 0 for r in ran)
    summary = result["summary"]["0.6"]
    assert summary["runs"] == 2 and len(summary["diffs"]) == 2
