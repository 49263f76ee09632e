"""The finish-rate tables of Appendix C: E1 modality (Table C.2, Fig 4.8), E2 bimodal sigma and
unequal stds (Table C.1, Figs 4.9-4.10), E3 real-world stand-ins (Tables C.4-C.7, Fig 4.7) and
E4 static models (Table C.3, Fig 4.11).

Each runs every system on the same recorded sequence per (workload, seed), at SLO = m x P99,
and writes the table with the paper's numbers beside ours.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kairos.experiments import ExperimentContext, experiment
from kairos.orloj.experiments.point import BOUND
from kairos.orloj.experiments.tables import TableConfig, publish_table, sweep_table
from kairos.orloj.workloads import BIMODAL, MODALITY, REAL_WORLD, STATIC_MS

# quick: five seeds of 1,000 requests, so each cell still has a 95% CI and paired differences
QUICK: dict[str, Any] = {"seeds": [0, 1, 2, 3, 4], "slo_mults": [1.5, 3.0, 5.0], "n_requests": 1000}


class FinishRateConfig(TableConfig):
    bound: bool = True  # every finish-rate table carries the clairvoyant bound as a row


class ModalityConfig(FinishRateConfig):
    workloads: list[str] = Field(default_factory=lambda: [f"{m}-modal" for m in MODALITY])


class BimodalConfig(FinishRateConfig):
    workloads: list[str] = Field(default_factory=lambda: list(BIMODAL))


class RealWorldConfig(FinishRateConfig):
    workloads: list[str] = Field(default_factory=lambda: list(REAL_WORLD))


class StaticConfig(FinishRateConfig):
    workloads: list[str] = Field(default_factory=lambda: list(STATIC_MS))


def _table(cfg: TableConfig, ctx: ExperimentContext, name: str, title: str) -> list[dict[str, Any]]:
    rows = sweep_table(ctx, cfg, description=name)
    publish_table(ctx, name, cfg, rows, [*cfg.systems, *([BOUND] if cfg.bound else [])], title)
    return rows


@experiment(
    "orloj",
    "modality",
    "Finish rate vs number of modes 1-8 (Table C.2, Fig 4.8)",
    ModalityConfig,
    quick={**QUICK, "workloads": ["one-modal", "two-modal", "three-modal"]},
)
def modality(cfg: ModalityConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _table(cfg, ctx, "modality", "E1 modality")


@experiment(
    "orloj",
    "bimodal",
    "Bimodal: per-mode std 0.5/1/2 and unequal stds (Table C.1, Figs 4.9-4.10)",
    BimodalConfig,
    quick={**QUICK, "workloads": ["std-1", "std-2/0.5", "std-0.5/2"]},
)
def bimodal(cfg: BimodalConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _table(cfg, ctx, "bimodal", "E2 bimodal")


@experiment(
    "orloj",
    "realworld",
    "Real-world stand-ins fitted to Table 4.1 (Tables C.4-C.7, Fig 4.7)",
    RealWorldConfig,
    quick={**QUICK, "workloads": ["gpt-cornell", "skipnet-imagenet", "bart-cnn"]},
)
def realworld(cfg: RealWorldConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _table(cfg, ctx, "realworld", "E3 real-world")


@experiment(
    "orloj",
    "static",
    "Static models, constant latency 5 ms / 8 ms (Table C.3, Fig 4.11)",
    StaticConfig,
    # 1,000 requests/s: 1,500 would span one or two of the 1-s burst slots
    quick={**QUICK, "n_requests": 6000},
)
def static(cfg: StaticConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    return _table(cfg, ctx, "static", "E4 static")
