"""Cohort selection: a decaying epsilon-greedy bandit per client (spec 3.6).

Each client treats the current leaves as arms and its rewards R as value estimates. With
probability epsilon0 * decay^r it picks a leaf uniformly at random, otherwise the leaf of highest
R, ties broken uniformly (a new client, all zeros, therefore picks at random).

Algorithm 2 line 27 reads "if random > eps^r then random cohort", which reverses the prose
("probability eps of random choice"); this follows the prose. The eps^r form is the special case
epsilon0 = 1, decay = eps. In `reward_mode="reference"` a client that has explored nothing picks
at random, as the authors' code does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import AffinityRecord


def exploration_rate(round: int, epsilon0: float, decay: float) -> float:
    """Probability of a uniform random pick at round r: epsilon0 * decay^r."""
    if round < 0:
        raise ValueError("round must be >= 0")
    return float(epsilon0 * decay**round)


def greedy(record: AffinityRecord, leaves: Sequence[str], rng: np.random.Generator) -> str:
    """Leaf of highest reward (missing entries count 0), ties uniform."""
    values = [record[c].reward if c in record else 0.0 for c in leaves]
    top = max(values) - 1e-12  # plain floats: a check-in per client per round runs this
    best = [i for i, v in enumerate(values) if v >= top]
    return leaves[best[0] if len(best) == 1 else int(rng.choice(np.array(best)))]


def select_cohort(
    record: AffinityRecord,
    leaves: Sequence[str],
    round: int,
    params: AuxoParams,
    rng: np.random.Generator,
) -> str:
    """COHORTSELECTION for one client: the leaf it asks to train with next."""
    if not leaves:
        raise ValueError("there is no leaf to select")
    leaves = list(leaves)
    explore = rng.random() < exploration_rate(round, params.epsilon0, params.epsilon_decay)
    fresh = params.reward_mode == "reference" and not any(
        record[c].explored for c in record if c in leaves
    )
    if explore or fresh:
        return leaves[int(rng.integers(len(leaves)))]
    return greedy(record, leaves, rng)
