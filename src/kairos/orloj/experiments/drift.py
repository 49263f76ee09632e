"""Drift: the machine runs slower than the batch-latency model every system was given.

A real server rarely runs at its profiled speed: on a shared machine the worker ran 10-60%
slower under load than when it was calibrated (the CI run that motivated this: drift 1.35 at
0.9 x capacity). Clockwork's estimate follows the measured batches; Orloj's distributions
do not, so its drop decisions keep trusting the old speed and batches finish late. This
sweep runs every batch `slowdown` times its g_k while the systems plan with g_k, with and
without Orloj's speed feedback (`speed_window`, kairos.orloj.speed), and with a factor per
batch size on top (`size_correction`). `--set point='{"slowdown_from":
0.5}'` starts the slowdown halfway through the requests instead of at the start. Not in the
paper.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kairos.experiments import ExperimentContext, experiment
from kairos.orloj.experiments.tables import TableConfig, publish_sweep, split_labels, sweep_table
from kairos.orloj.speed import SERVED_SPEED_WINDOW

SYSTEMS: dict[str, dict[str, Any]] = {
    "orloj": {"system": "orloj"},
    "orloj+speed": {"system": "orloj", "options": {"speed_window": SERVED_SPEED_WINDOW}},
    "orloj+sizes": {
        "system": "orloj",
        "options": {"speed_window": SERVED_SPEED_WINDOW, "size_correction": True},
    },
    "clockwork": {"system": "clockwork"},
}


class DriftConfig(TableConfig):
    """The systems are fixed (Orloj with and without feedback, Clockwork): `systems` and
    `system_options` do not apply here."""

    workloads: list[str] = Field(default_factory=lambda: ["three-modal"])
    slo_mults: list[float] = Field(default_factory=lambda: [2.0, 3.0])
    slowdowns: list[float] = Field(default_factory=lambda: [1.0, 1.3, 1.6])
    rho: float = Field(0.9, gt=0)


@experiment(
    "orloj",
    "drift",
    "An unprofiled slowdown of the machine: Orloj with and without speed feedback (extra)",
    DriftConfig,
    quick={"seeds": [1], "n_requests": 3000, "slo_mults": [2.0], "slowdowns": [1.0, 1.6]},
)
def drift(cfg: DriftConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    """Every system at every slowdown, on the same recorded requests."""
    labels = {
        f"{name}@slowdown={x:g}": {**upd, "slowdown": x}
        for x in cfg.slowdowns
        for name, upd in SYSTEMS.items()
    }
    rows = sweep_table(ctx, cfg, labels, "drift")
    split_labels(rows, labels, "slowdown")
    xlabel = "slowdown (true batch time / profiled g_k)"
    publish_sweep(ctx, "drift", cfg, rows, "slowdown", cfg.slowdowns, list(SYSTEMS), xlabel)
    return rows
