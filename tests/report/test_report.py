from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import kairos
from kairos.report import cdf, save_cdf_plot, save_line_plot, summarize, write_result


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=200))
def test_summary_percentiles_are_ordered_and_bounded(xs: list[float]) -> None:
    s = summarize(xs)
    assert s.n == len(xs)
    assert s.min <= s.p50 <= s.p90 <= s.p95 <= s.p99 <= s.max
    assert s.min - 1e-6 <= s.mean <= s.max + 1e-6


@given(st.lists(st.floats(0, 100), min_size=1, max_size=100))
def test_cdf_is_a_nondecreasing_step_to_one(xs: list[float]) -> None:
    x, y = cdf(xs)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0) and y[-1] == 1.0


def test_summary_ignores_non_finite_and_handles_empty() -> None:
    assert summarize([1.0, float("nan"), 3.0]).mean == 2.0
    assert summarize([]).n == 0


class Cfg(BaseModel):
    rate: float = 2.0
    policy: str = "andes"


def test_result_files_carry_provenance(tmp_path: Path) -> None:
    rows = [{"policy": "fcfs", "qoe": 0.5}, {"policy": "andes", "qoe": 0.9, "extra": [1, 2]}]
    js, cs = write_result(tmp_path, "e2", config=Cfg(), rows=rows, summary={"gain": 1.8}, seed=3)
    data = json.loads(js.read_text())
    assert data["config"] == {"rate": 2.0, "policy": "andes"}
    assert data["seed"] == 3 and data["summary"]["gain"] == 1.8
    assert data["provenance"]["package_version"] == kairos.__version__
    # a real commit inside a checkout, `unknown` outside one (tests/report/test_git_revision.py)
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", data["provenance"]["git_revision"])
    with cs.open() as fh:
        read = list(csv.DictReader(fh))
    assert [r["policy"] for r in read] == ["fcfs", "andes"] and read[1]["extra"] == "[1, 2]"


def test_plots_are_png_files(tmp_path: Path) -> None:
    p1 = save_line_plot(
        tmp_path / "a.png",
        [1, 2, 3],
        {"ours": [1, 2, 3]},
        xlabel="x",
        ylabel="y",
        reference={"andes": [1, 2, 2]},
    )
    p2 = save_cdf_plot(tmp_path / "b.png", {"ours": [3, 1, 2]}, xlabel="QoE")
    for p in (p1, p2):
        assert p.read_bytes()[:4] == b"\x89PNG" and p.stat().st_size > 1000
