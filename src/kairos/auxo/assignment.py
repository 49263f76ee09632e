"""Assigning a new client at deployment (spec 3.9).

The server keeps no absolute cohort centres, so a new client probes leaves. Each probe trains one
local round on a leaf's latest model; the leaf scores the update against the centre and
threshold it stored from its last round on that model (`LeafProbeFrame`) and returns dR. The
client applies the usual exploit/explore update, so a bad fit steers the next probe to the far
subtree. It stops at the first non-negative reward or after ceil(log2 M) + 1 probes and joins its
best leaf.

`probe` is the only way in: it takes a leaf id and returns dR, so this module never sees the
client's data. `oracle_assignment` (lowest loss) is a diagnostic for evaluation, not Auxo.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kairos.auxo.features import FeatureFrame
from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import (
    AffinityEntry,
    AffinityRecord,
    RewardFrame,
    apply_feedback,
    instant_reward,
)
from kairos.auxo.selection import greedy


@dataclass(frozen=True)
class LeafProbeFrame:
    """What a leaf keeps from its last round to score one new update: frame, centre, tau."""

    features: FeatureFrame
    rewards: RewardFrame

    def score(self, compressed_update: np.ndarray, params: AuxoParams) -> float:
        """dR of one compressed update on this leaf's model (same frame as its last round)."""
        return instant_reward(self.features.place(compressed_update), self.rewards, params)


@dataclass
class Assignment:
    """The chosen leaf, the probes made (leaf, dR) and the record built on the way."""

    leaf: str
    probes: list[tuple[str, float]]
    record: dict[str, AffinityEntry] = field(default_factory=dict)


def max_probes(m_leaves: int) -> int:
    """ceil(log2 M) + 1 probes: enough for a binary search over a balanced tree."""
    return math.ceil(math.log2(max(m_leaves, 1))) + 1


def assign_new(
    probe: Callable[[str], float],
    leaves: Sequence[str],
    params: AuxoParams,
    rng: np.random.Generator,
    *,
    limit: int | None = None,
) -> Assignment:
    """ASSIGN_NEW: probe leaves (greedy on the growing record) and return the best one."""
    if not leaves:
        raise ValueError("there is no leaf to assign to")
    leaves = list(leaves)
    record: AffinityRecord = {c: AffinityEntry() for c in leaves}
    probes: list[tuple[str, float]] = []
    for _ in range(max_probes(len(leaves)) if limit is None else limit):
        unexplored = [c for c in leaves if not record[c].explored]
        if not unexplored:
            break
        m = greedy(record, unexplored, rng)
        delta = float(probe(m))
        probes.append((m, delta))
        apply_feedback(record, m, delta, None, leaves, params)
        if delta >= 0:
            break
    return Assignment(greedy(record, leaves, rng), probes, dict(record))


def oracle_assignment(losses: Mapping[str, float]) -> str:
    """Diagnostic only: the leaf whose model has the lowest loss on the client (ties: first id)."""
    if not losses:
        raise ValueError("no losses given")
    return min(sorted(losses), key=lambda c: losses[c])
