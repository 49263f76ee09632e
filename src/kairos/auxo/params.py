"""Auxo's parameters (spec 3.12), validated once at the edge.

Every [R] (authors' reference code) and [P] (spec proposal) choice of the spec is a field here, so
an experiment can switch it; the defaults are the spec's. Round-dependent thresholds are given as
fractions of `total_rounds` and resolved by the properties below, because the paper states them
that way (e.g. "not at the beginning or the end": 5% and 50% of training).

`AuxoParams.reference()` is the code-compatible mode: the settings of the authors' FedScale
example (`examples/auxo`), binary splits at fixed cohort-local rounds `(50, 100)`, their
cumulative base-5 reward without tree prediction, and clustering from round 2.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

HetRule = Literal["G", "J"]
FeatureNorm = Literal["unit", "center", "none"]
FeatureDtype = Literal["float16", "float32", "float64"]
ExploreUpdate = Literal["ema", "add"]
ExploreTargets = Literal["unexplored", "all"]
RewardMode = Literal["auxo", "reference"]
OutlierTau = Literal["round", "known"]
UnlabelledAtSplit = Literal["uniform", "probe"]


class AuxoParams(BaseModel):
    """Every knob of Auxo's clustering, partitioning, rewards and selection (spec 3.12)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- tree and resources (3.3, 3.4) ---
    k: int = Field(2, ge=2, description="children per split (K)")
    max_leaves: int = Field(4, ge=1, description="leaf cap K_max (Fig. 3.13c)")
    p_total: int = Field(200, ge=1, description="participants per round over all cohorts")
    p_min: int | None = Field(None, ge=1, description="least per-child budget; None: max(5, 0.1 P)")
    alpha_bound: float | None = Field(
        None, gt=0, description="Lemma 1 form: also need P_child >= alpha*sqrt(P_0)/G_0"
    )
    n_clients: int | None = Field(None, ge=1, description="population N for n_min; None: no check")
    n_min_fraction: float = Field(1 / 20, ge=0, description="n_min = ceil(N*this*decay^(M-1))")
    n_min_decay: float = Field(0.9, gt=0, le=1)
    size_ratio: tuple[float, float] = Field((0.5, 2.0), description="sub-cluster size ratio, M>1")

    # --- timing (3.3 criterion 5), as fractions of total_rounds ---
    total_rounds: int = Field(1000, ge=1)
    r_start_fraction: float = Field(0.02, ge=0, le=1, description="first clustering round")
    r_min_partition_fraction: float = Field(0.05, ge=0, le=1)
    r_max_partition_fraction: float = Field(0.5, ge=0, le=1)
    min_gap_fraction: float = Field(0.05, ge=0, le=1, description="rounds since cohort creation")
    r_freeze_labels_fraction: float = Field(0.5, ge=0, le=1, description="labels frozen after")
    partition_schedule: Literal["adaptive"] | tuple[int, ...] = Field(
        "adaptive", description="'adaptive' or fixed cohort-local split rounds (authors' code)"
    )

    # --- heterogeneity and separation tests (3.3 criterion 1, E0) ---
    het_rule: HetRule = Field("G", description="G: SSE ratio <= 1/K; J: SSE ratio <= 1/sqrt(K)")
    patience: int = Field(3, ge=1, description="consecutive clustering rounds the test must hold")
    separation_factor: float | None = Field(
        0.35,
        gt=0,
        description="pairwise projected SSE ratio must be <= this * (1 - 2/pi); None: no test",
    )
    separation_window: int = Field(10, ge=1, description="clustering rounds pooled for separation")

    # --- features and clustering (3.1, 3.2) ---
    grad_fraction: float = Field(0.5, gt=0, le=1, description="last fraction of coordinates kept")
    feature_dtype: FeatureDtype = "float16"
    feature_norm: FeatureNorm = Field("unit", description="unit: centre then L2-normalise")
    min_clients_to_cluster: int = Field(5, ge=1)
    kmeans_n_init: int = Field(10, ge=1)
    kmeans_max_iter: int = Field(100, ge=1)
    label_votes: bool = Field(False, description="smooth labels by per-client votes (R code)")
    loss_fallback: bool = Field(
        False, description="a client no leaf rewards picks its lowest-loss leaf (not the source)"
    )
    straggler_feedback: bool = Field(
        False, description="score dropped stragglers' late updates for rewards (not the source)"
    )
    unlabelled_at_split: UnlabelledAtSplit = Field(
        "uniform",
        description="a client tied over a split's children with no label there: uniform (the "
        "text) or probe: one local round on the split's frame, nearest centroid (not the source)",
    )

    # --- rewards and selection (3.5, 3.6) ---
    gamma: float = Field(0.2, gt=0, le=1, description="reward EMA weight")
    split_bonus: float = Field(0.1, ge=0)
    min_known: int = Field(2, ge=1, description="known members needed to estimate a centre")
    explore_update: ExploreUpdate = "ema"
    explore_targets: ExploreTargets = "unexplored"
    reward_mode: RewardMode = "auxo"
    outlier_tau: OutlierTau = Field(
        "round",
        description="tau = mean(D)+std(D) over all participants (round, the text) or the known",
    )
    reference_base: float = Field(5.0, gt=0, description="reward base of reward_mode='reference'")
    epsilon0: float = Field(0.01, ge=0, le=1)
    epsilon_decay: float = Field(0.99, gt=0, le=1)

    # --- optional behaviours the spec lists ---
    merge: bool = False
    merge_fraction: float = Field(0.1, gt=0, le=1, description="merge below N*this members")
    merge_rounds: int = Field(5, ge=1)
    overcommit: float = Field(1.3, ge=1)
    ckpt_every: int = Field(10, ge=1)
    blacklist_after: int = Field(3, ge=1)

    @model_validator(mode="after")
    def _check(self) -> AuxoParams:
        lo, hi = self.size_ratio
        if not 0 < lo < 1 < hi:
            raise ValueError("size_ratio must be (lo, hi) with 0 < lo < 1 < hi, e.g. (0.5, 2.0)")
        if self.r_min_partition_fraction > self.r_max_partition_fraction:
            raise ValueError("r_min_partition_fraction must not exceed r_max_partition_fraction")
        if self.max_leaves < 1:
            raise ValueError("max_leaves must be >= 1")
        if isinstance(self.partition_schedule, tuple) and any(
            r < 0 for r in self.partition_schedule
        ):
            raise ValueError("partition_schedule rounds must be >= 0")
        return self

    # --- resolved values ---
    def _rounds(self, fraction: float) -> int:
        return math.floor(fraction * self.total_rounds + 1e-9)

    @property
    def r_start(self) -> int:
        return self._rounds(self.r_start_fraction)

    @property
    def r_min_partition(self) -> int:
        return self._rounds(self.r_min_partition_fraction)

    @property
    def r_max_partition(self) -> int:
        return self._rounds(self.r_max_partition_fraction)

    @property
    def min_gap(self) -> int:
        return self._rounds(self.min_gap_fraction)

    @property
    def r_freeze_labels(self) -> int:
        return self._rounds(self.r_freeze_labels_fraction)

    @property
    def p_min_resolved(self) -> int:
        """Least per-child budget: the given value, else max(5, 0.1 P_total) [P]."""
        if self.p_min is not None:
            return self.p_min
        return max(5, math.ceil(0.1 * self.p_total))

    def n_min(self, m_leaves: int) -> int:
        """Distinct clients each sub-cluster needs: ceil(N/20 * 0.9^(M-1)) [R]; 0 without N."""
        if self.n_clients is None:
            return 0
        return math.ceil(self.n_clients * self.n_min_fraction * self.n_min_decay ** (m_leaves - 1))

    @classmethod
    def reference(cls, **overrides: Any) -> AuxoParams:
        """The authors' FedScale example (code-compatible mode).

        Binary splits at fixed cohort-local rounds 50 and 100 of 1000 (so at most four leaves),
        the cumulative base-5 reward scaled by the known share and no tree prediction, clustering
        from round 2, labels frozen after round 500. Pass overrides for anything else.
        """
        base: dict[str, Any] = {
            "k": 2,
            "max_leaves": 4,
            "total_rounds": 1000,
            "partition_schedule": (50, 100),
            "reward_mode": "reference",
            "r_start_fraction": 0.002,
            "r_freeze_labels_fraction": 0.5,
        }
        base.update(overrides)
        return cls(**base)
