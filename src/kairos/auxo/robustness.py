"""Faults and privacy a cohort run can be put under (spec 3.11, experiment E6).

Two of E6's three stresses act on Auxo's own inputs and state, so they live beside the driver:

* local differential privacy on the clustering features: before a participant's update is
  clustered, the client clips it to L2 norm `ldp_clip` (C) and adds N(0, sigma^2 C^2) to every
  coordinate (the Gaussian mechanism of spec 3.11; sigma = 1.0, 0.77, 0.6 for epsilon = 2, 4, 8
  at delta = 1e-6). Only the copy Auxo clusters and rewards is noised; the model update that is
  aggregated is the clean one. That is the deployment where the server sums updates under
  secure aggregation and never sees one client's update, so Auxo's per-client view has to be
  released separately, and privately. (Noising the aggregated update too would change the
  single-model baseline as well and measure DP-FedAvg, not Auxo.)
* affinity-record loss (spec 3.11: "the client restarts as new and explores again", tested at
  "loss rates of 0-20%"; the rate's unit is not stated, so both readings are here):
  `record_loss_mode="once"`, a `record_loss` share of the clients each lose their whole record
  once, at a uniform random point of the run (`loss_schedule`); `"per_round"`, after every
  feedback each participant loses it with probability `record_loss` (a far harsher stress:
  at 20% most clients lose their record several times).

The third, label flipping, corrupts data, so it is `kairos.fl.learning.corruption`.

Randomness is stateless: each draw comes from a generator seeded by (run seed, client, cohort,
cohort round), so adding a fault changes no other random stream of the run (the clean and the
faulty run stay paired) and a checkpoint needs no extra state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

# spec 3.11: (epsilon at delta = 1e-6) -> noise multiplier sigma
SIGMA_FOR_EPSILON: dict[int, float] = {2: 1.0, 4: 0.77, 8: 0.6}

_LDP_STREAM = 7
_LOSS_STREAM = 8


@dataclass(frozen=True)
class Faults:
    """What a run is put under; the default is a clean run."""

    ldp_sigma: float | None = None  # noise multiplier on the clustering features; None: off
    ldp_clip: float = 1.0  # C: features are clipped to this L2 norm before noise
    record_loss: float = 0.0  # share of clients (once) or per-feedback probability (per_round)
    record_loss_mode: Literal["once", "per_round"] = "once"

    def __post_init__(self) -> None:
        if self.ldp_sigma is not None and self.ldp_sigma < 0:
            raise ValueError("ldp_sigma must be >= 0")
        if self.ldp_clip <= 0:
            raise ValueError("ldp_clip must be > 0")
        if not 0.0 <= self.record_loss <= 1.0:
            raise ValueError("record_loss must be in [0, 1]")

    @property
    def clean(self) -> bool:
        return self.ldp_sigma is None and self.record_loss == 0.0


def _stream(seed: int, kind: int, client: int, cohort: str, round: int) -> np.random.Generator:
    path = [int(p) for p in cohort.split(".")]
    return np.random.default_rng([seed, kind, int(client), round, len(path), *path])


def clip_rows(updates: np.ndarray, clip: float) -> np.ndarray:
    """Each row scaled down to L2 norm <= clip (rows already inside are unchanged)."""
    u = np.asarray(updates, dtype=np.float64)
    norms = np.linalg.norm(u, axis=1, keepdims=True)
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    return u * scale


def privatize(
    updates: np.ndarray,
    client_ids: Sequence[int],
    cohort: str,
    round: int,
    faults: Faults,
    seed: int,
) -> np.ndarray:
    """The clustering view of one cohort-round under LDP: clipped rows plus Gaussian noise,
    each client's noise from its own stream (what its device would add)."""
    if faults.ldp_sigma is None:
        return np.asarray(updates)
    clipped = clip_rows(updates, faults.ldp_clip)
    std = faults.ldp_sigma * faults.ldp_clip
    noise = np.stack(
        [
            _stream(seed, _LDP_STREAM, c, cohort, round).normal(0.0, std, clipped.shape[1])
            for c in client_ids
        ]
    ).reshape(clipped.shape)
    return clipped + noise


def loss_schedule(n_clients: int, horizon: int, faults: Faults, seed: int) -> dict[int, float]:
    """Mode "once": client -> the progress round at which it loses its record, for the
    `record_loss` share of clients drawn (each independently) to lose it."""
    if faults.record_loss <= 0.0 or faults.record_loss_mode != "once":
        return {}
    out: dict[int, float] = {}
    for c in range(n_clients):
        u, t = np.random.default_rng([seed, _LOSS_STREAM, c]).random(2)
        if u < faults.record_loss:
            out[c] = float(t * horizon)
    return out


def lost_records(
    client_ids: Sequence[int], cohort: str, round: int, faults: Faults, seed: int
) -> list[int]:
    """Mode "per_round": the participants of this cohort-round that lose their record now."""
    if faults.record_loss <= 0.0 or faults.record_loss_mode != "per_round":
        return []
    return [
        int(c)
        for c in client_ids
        if _stream(seed, _LOSS_STREAM, c, cohort, round).random() < faults.record_loss
    ]
