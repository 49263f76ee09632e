"""Decaying epsilon-greedy cohort selection (spec 3.6, 7.7)."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import AffinityEntry, AffinityRecord
from kairos.auxo.selection import exploration_rate, select_cohort

LEAVES = ["0.0", "0.1", "0.2", "0.3"]


def test_rate_decays_geometrically() -> None:
    assert exploration_rate(0, 0.5, 0.9) == 0.5
    assert exploration_rate(10, 0.5, 0.9) == pytest.approx(0.5 * 0.9**10)
    with pytest.raises(ValueError):
        exploration_rate(-1, 0.5, 0.9)


@pytest.mark.parametrize("round", [0, 20, 60])
def test_empirical_exploration_rate_matches_epsilon0_decay_to_the_r(round: int) -> None:
    params = AuxoParams(epsilon0=0.5, epsilon_decay=0.98)
    record: AffinityRecord = {"0.2": AffinityEntry(1.0)}  # greedy always picks 0.2
    rng = np.random.default_rng(round)
    n = 20_000
    off = sum(select_cohort(record, LEAVES, round, params, rng) != "0.2" for _ in range(n))
    eps = exploration_rate(round, 0.5, 0.98)
    expected = eps * 3 / 4  # a random pick lands on 0.2 a quarter of the time
    assert abs(off / n - expected) < 4 * np.sqrt(expected * (1 - expected) / n) + 1e-3


def test_all_zero_rewards_give_a_uniform_choice() -> None:
    params = AuxoParams(epsilon0=0.0)
    rng = np.random.default_rng(1)
    n = 8000
    picks = [select_cohort({}, LEAVES, 5, params, rng) for _ in range(n)]
    counts = np.array([picks.count(c) for c in LEAVES])
    chi2 = float(((counts - n / 4) ** 2 / (n / 4)).sum())
    assert chi2 < 16.3  # 3 degrees of freedom, p = 0.001


def test_greedy_picks_the_highest_reward_and_is_seeded() -> None:
    params = AuxoParams(epsilon0=0.0)
    record: AffinityRecord = {"0.1": AffinityEntry(-0.2), "0.3": AffinityEntry(0.4)}
    assert {
        select_cohort(record, LEAVES, 0, params, np.random.default_rng(s)) for s in range(20)
    } == {"0.3"}
    a = [select_cohort({}, LEAVES, 0, params, np.random.default_rng(9)) for _ in range(3)]
    b = [select_cohort({}, LEAVES, 0, params, np.random.default_rng(9)) for _ in range(3)]
    assert a == b


def test_reference_mode_picks_at_random_until_something_is_explored() -> None:
    params = AuxoParams.reference(epsilon0=0.0)
    record: AffinityRecord = {"0.1": AffinityEntry(0.1)}  # inherited, not explored
    picks = {select_cohort(record, LEAVES, 0, params, np.random.default_rng(s)) for s in range(40)}
    assert len(picks) > 1
    record["0.1"].explored = True
    assert select_cohort(record, LEAVES, 0, params, np.random.default_rng(0)) == "0.1"
