"""Plots of the headline experiments: the grouped-bar helper draws exactly the numbers it is
given, and Salus E1, Fluid's Figs 3.7/3.8 and Auxo E1 write their PNGs next to their JSON
(each run here on the smallest config that still fills every plot)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer
from matplotlib.image import imread

from kairos.experiments import ExperimentContext, get_experiment
from kairos.report.plots import bar_layout, grouped_bar_figure

GROUPS = ["a", "b", "c"]
SERIES = {"x": [1.0, 2.5, 0.5], "y": [3.0, 0.25, 1.75]}


def error_segments(container: BarContainer) -> list[tuple[float, float, float]]:
    """(x, low end, high end) of each error bar matplotlib drew for one series."""
    assert container.errorbar is not None
    lines = [c for c in container.errorbar.lines[2] if isinstance(c, LineCollection)]
    return [
        (float(seg[0][0]), float(min(seg[0][1], seg[1][1])), float(max(seg[0][1], seg[1][1])))
        for seg in lines[0].get_segments()
    ]


def is_dashed(lines: LineCollection) -> bool:
    """Solid lines have no dash pattern: (offset, None)."""
    styles = cast(list[tuple[float, Any]], lines.get_linestyle())
    return styles[0][1] is not None


def test_bars_and_symmetric_error_bars_are_the_input() -> None:
    ci = {"x": [0.1, 0.2, float("nan")], "y": [0.5, 0.05, 0.3]}
    fig = grouped_bar_figure(GROUPS, SERIES, ci=ci, ylabel="v")
    try:
        containers = [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]
        assert len(containers) == 2
        for container, (name, ys) in zip(containers, SERIES.items(), strict=True):
            assert [p.get_height() for p in container.patches] == pytest.approx(ys)
            for (x, lo, hi), y, half, patch in zip(
                error_segments(container), ys, ci[name], container.patches, strict=True
            ):
                half = 0.0 if math.isnan(half) else half
                assert x == pytest.approx(patch.get_x() + patch.get_width() / 2)
                assert [lo, hi] == pytest.approx([y - half, y + half])
        # bars of a group straddle its tick, series in order
        assert [p.get_x() for p in containers[0].patches] < [
            p.get_x() for p in containers[1].patches
        ]
        assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == GROUPS
    finally:
        plt.close(fig)


def test_asymmetric_bounds_references_ranges_and_baseline() -> None:
    bounds = {"x": [(0.8, 1.5), (2.0, 2.6), (float("nan"), float("nan"))]}
    reference = {"y": [2.0, float("nan"), 1.0]}
    fig = grouped_bar_figure(
        GROUPS,
        SERIES,
        bounds=bounds,
        reference=reference,
        ranges={"b": (1.1, 1.3)},
        baseline=1.0,
        ylabel="v",
    )
    try:
        ax = fig.axes[0]
        container = next(c for c in ax.containers if isinstance(c, BarContainer))
        ends = [v for _, lo, hi in error_segments(container) for v in (lo, hi)]
        assert ends == pytest.approx([0.8, 1.5, 2.0, 2.6, 0.5, 0.5])
        dashed = [c for c in ax.collections if isinstance(c, LineCollection) and is_dashed(c)]
        heights = sorted(float(seg[0][1]) for c in dashed for seg in c.get_segments())
        # the paper's two marks for "y" (NaN draws none) and the range's two edges, nothing else
        assert heights == pytest.approx([1.0, 1.1, 1.3, 2.0])
        ys = [np.asarray(line.get_ydata(), dtype=float).tolist() for line in ax.get_lines()]
        assert [1.0, 1.0] in ys  # the baseline
    finally:
        plt.close(fig)


def test_layout_is_pure_and_refuses_a_ragged_series() -> None:
    bars = bar_layout(GROUPS, SERIES, bounds={"y": [(2.0, 4.0), (0.0, 1.0), (1.5, 2.5)]})
    assert [(b.group, b.series, b.height) for b in bars[:3]] == [
        ("a", "x", 1.0),
        ("b", "x", 2.5),
        ("c", "x", 0.5),
    ]
    ends = [v for b in bars[3:] for v in (b.below, b.above)]
    assert ends == pytest.approx([1.0, 1.0, 0.25, 0.75, 0.25, 0.75])
    assert all(b.below == b.above == 0.0 for b in bars[:3])
    with pytest.raises(ValueError, match="groups"):
        bar_layout(GROUPS, {"x": [1.0, 2.0]})


def assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 5_000, path
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] >= 300 and image.shape[1] >= 500
    assert float(np.std(image)) > 0.01  # something was drawn


def context(path: Path) -> ExperimentContext:
    return ExperimentContext(path, progress=False, cache=False)


def test_salus_table2_1_writes_bars_and_the_jct_cdf(tmp_path: Path) -> None:
    from kairos.salus.experiments import e1

    cfg = e1.E1Config.model_validate(
        {"seeds": 2, "policies": ("fifo", "srtf"), "point": {"trace": {"time_scale": 0.05}}}
    )
    out = e1.table2_1(cfg, context(tmp_path))
    for name in ("table2_1", "table2_1_jct_cdf"):
        assert (tmp_path / f"{name}.json").is_file()
        assert_png(tmp_path / f"{name}.png")
    # the CDF's percentiles are in the JSON, monotone, and end at each policy's longest job
    written = json.loads((tmp_path / "table2_1_jct_cdf.json").read_text())["rows"]
    assert written == out["jct_cdf"]
    for policy in ("fifo", "srtf"):
        jct = [r["jct_min"] for r in written if r["policy"] == policy]
        assert len(jct) == 101 and jct == sorted(jct) and jct[0] > 0
    row = {r["policy"]: r for r in out["rows"]}
    p95 = {r["policy"]: r["jct_min"] for r in written if r["quantile"] == 0.95}
    assert p95["srtf"] <= p95["fifo"]
    assert row["fifo"]["avg_jct_min"] > row["srtf"]["avg_jct_min"]


def test_fluid_fig3_7_writes_the_speedup_bars(tmp_path: Path) -> None:
    from kairos.fluid.experiments import matrix

    cfg = matrix.MatrixConfig(
        seeds=2,
        tuners=("hyperband", "asha"),
        workloads=("cifar",),
        settings_gpus=(4,),
        settings_tuners=("asha",),
    )
    rows: list[dict[str, Any]] = matrix.fig3_7(cfg, context(tmp_path))
    assert (tmp_path / "fig3_7.json").is_file()
    assert {(r["tuner"], r["gpus"]) for r in rows} == {("hyperband", 8), ("asha", 8), ("asha", 4)}
    assert_png(tmp_path / "fig3_7.png")
    assert_png(tmp_path / "fig3_7_settings.png")


def test_auxo_e1_writes_gain_and_speedup_bars(tmp_path: Path) -> None:
    from kairos.auxo.experiments import e1

    cfg = e1.E1Config.model_validate(
        {
            "seeds": 2,
            "algorithms": ("fedavg",),
            "label_skew": None,
            "unequal": None,
            "point": {"data": {"n_clients": 40}, "rounds": 20, "eval_every": 5},
        }
    )
    out = e1.e1(cfg, context(tmp_path))
    assert (tmp_path / "e1.json").is_file() and len(out["rows"]) == 1
    assert_png(tmp_path / "e1.png")
    assert_png(tmp_path / "e1_speedup.png")


def test_salus_snapshot_and_packing_demo_plots(tmp_path: Path) -> None:
    from kairos.salus.experiments import demos, snapshots

    out = snapshots.fig2_8a(snapshots.SnapshotConfig(), context(tmp_path))
    assert_png(tmp_path / "fig2_8a.png")
    assert len(out["segments"]) == len(snapshots.E2_ORDER)
    rows = demos.fig2_10(demos.HyperConfig(jobs=10, job_s=5.0), context(tmp_path))
    assert len(rows) == 2
    assert_png(tmp_path / "fig2_10.png")


FLUID_SMALL: dict[str, dict[str, Any]] = {
    "fig3_3": {"seeds": 2, "levels": (4, 8)},
    "fig3_10": {"seeds": 2, "gpus": (4, 8)},
    "fig3_11": {
        "seeds": 2,
        "packing_configs": (9,),
        "scaling_configs": (2,),
        "sizes": ("small",),
    },
    "fig3_12": {"seeds": 2, "cvs": (0.0, 0.5)},
    "fig3_13a": {"seeds": 2, "configs": 9, "multipliers": (1.0, 10.0)},
    "fig3_13b": {"seeds": 2, "gpus": (4, 8), "workloads": ("cifar",)},
}


@pytest.mark.parametrize("name", sorted(FLUID_SMALL))
def test_fluid_figures_write_a_png_beside_their_json(name: str, tmp_path: Path) -> None:
    exp = get_experiment("fluid", name)
    rows = exp.run(exp.config(overrides=FLUID_SMALL[name]), context(tmp_path))
    assert rows and (tmp_path / f"{name}.json").is_file()
    assert_png(tmp_path / f"{name}.png")
