"""Workloads, arrivals and recordings: the fitted stand-ins match the paper's numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kairos.orloj.arrivals import bursty, generate, read_azure_functions, shaped_by_counts
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.workloads import (
    REAL_WORLD,
    capacity_per_ms,
    get_workload,
    reference_stats,
    workload_names,
)
from kairos.workloads import TraceFormatError

MODEL = BatchLatencyModel()


@pytest.mark.parametrize("name", list(REAL_WORLD))
def test_real_world_stand_ins_match_table_4_1(name: str) -> None:
    mean, p99, _ = REAL_WORLD[name]
    w = get_workload(name)
    assert w.mean_ms == pytest.approx(mean, rel=0.02)
    assert w.p99_ms == pytest.approx(p99, rel=0.02)
    short, long = (reference_stats(d) for _, d in w.apps)
    assert short[0] < long[0] and short[1] <= long[2] * 1.0001  # split at the median


def test_synthetic_modes_are_one_app_each_with_the_spec_locations() -> None:
    w = get_workload("three-modal")
    assert w.app_names == ("mode0", "mode1", "mode2")
    assert [reference_stats(d)[0] for _, d in w.apps] == pytest.approx([20, 100, 180], rel=0.04)
    assert w.mean_ms == pytest.approx(100, rel=0.02) and w.p99_ms == pytest.approx(200, rel=0.03)
    _, solo = get_workload("std-2/0.5").sample(50_000, np.random.default_rng(0))
    assert solo.min() >= 1.0  # truncated below at 0.1 unit
    assert len(workload_names()) == 5 + 8 + 10 + 2
    with pytest.raises(KeyError, match="unknown workload"):
        get_workload("nine-modal")


def test_scaling_and_capacity() -> None:
    w = get_workload("three-modal", scale=0.1)
    assert w.p99_ms == pytest.approx(0.1 * get_workload("three-modal").p99_ms, rel=0.01)
    static = get_workload("resnet-imagenet")
    assert capacity_per_ms(static, MODEL) == pytest.approx(16 / float(MODEL.g(16, 5.0)))
    # a mixture's capacity is set by the max of 16 draws, not the mean
    mixed = get_workload("std-1")
    assert capacity_per_ms(mixed, MODEL) < 16 / float(MODEL.g(16, mixed.mean_ms))


def test_bursty_arrivals_keep_the_mean_rate_and_are_burstier_than_poisson() -> None:
    rng = np.random.default_rng(0)
    b = bursty(30_000, 0.05, rng)
    p = generate("poisson", 30_000, 0.05, np.random.default_rng(0))
    assert 30_000 / b[-1] == pytest.approx(0.05, rel=0.06)
    assert np.all(np.diff(b) >= 0) and b.size == 30_000

    def slot_cv(t: np.ndarray) -> float:
        c = np.bincount((t // 1000).astype(int))
        return float(c.std() / c.mean())

    assert slot_cv(b) > 0.4 > 0.2 > slot_cv(p)


def test_azure_functions_counts_shape_the_slot_rates(tmp_path: Path) -> None:
    f = tmp_path / "inv.csv"
    f.write_text(
        "HashOwner,HashApp,HashFunction,Trigger,1,2,3\no,a,f1,http,10,0,30\no,a,f2,timer,0,20,0\n"
    )
    assert read_azure_functions(f).tolist() == [10, 20, 30]
    assert read_azure_functions(f, function="f2").tolist() == [0, 20, 0]
    t = shaped_by_counts(np.array([1.0, 3.0]), 20_000, 0.02, np.random.default_rng(1))
    share_odd = float(np.mean((t // 1000).astype(int) % 2 == 1))
    assert share_odd == pytest.approx(0.75, abs=0.02)
    bad = tmp_path / "bad.csv"
    bad.write_text("HashOwner,HashApp,Trigger,1\no,a,http,1\n")
    with pytest.raises(TraceFormatError, match="HashFunction"):
        read_azure_functions(bad)


def test_the_shared_azure_trace_replays_at_the_requested_rate(data_dir: Path) -> None:
    t = generate(
        "azure_llm",
        5000,
        0.1,
        np.random.default_rng(0),
        trace_path=data_dir / "azure_llm_conv_1h.csv",
    )
    assert t.size == 5000 and t[0] == 0.0
    whole = generate(
        "azure_llm",
        10**6,
        0.1,
        np.random.default_rng(0),
        trace_path=data_dir / "azure_llm_conv_1h.csv",
    )
    assert whole.size / whole[-1] == pytest.approx(0.1, rel=1e-3)
