"""Placement diagnostics: outlier shares by round kind and what sets misplaced clients apart."""

from __future__ import annotations

import numpy as np

from kairos.auxo.diagnostics import placement_diagnostics
from kairos.auxo.rewards import AffinityEntry
from tests.auxo.core.round_reports import LEAVES, report


def test_rounds_are_split_into_pure_and_mixed_and_visits_counted() -> None:
    # clients 0-2 belong to leaf 0 ("0.0"), client 3 to leaf 1; client 3 is placed in leaf 0
    oracle = np.array([0, 0, 0, 1])
    membership = np.array([0, 0, 0, 0])
    reports = [
        report("0", [0, 1, 2, 3], None),  # one cohort: no reward, not a visit
        report("0.0", [0, 1, 2], [0.1, -0.05, 0.2]),  # pure: one false outlier in three
        report("0.0", [0, 1, 3], [0.1, 0.1, -0.3]),  # mixed: the outsider is the outlier
        report("0", [0, 1], [0.1, 0.1]),  # a split parent: counts as a visit only
    ]
    records = {3: {"0.0": AffinityEntry(0.05, None, False)}}
    d = placement_diagnostics(reports, records, LEAVES, oracle, membership, rare=2)
    assert d.pure_outlier_share == 1 / 3
    assert d.member_outlier_share == 0.0 and d.outsider_outlier_share == 1.0
    # visits: client 0: 3, 1: 3, 2: 1, 3: 1; misplaced: client 3 only
    assert d.visits_misplaced == 1.0 and d.visits_placed == 3.0
    assert d.misplaced_rare == 0.5 and d.misplaced_frequent == 0.0  # rare: clients 2 and 3
    assert d.never_trained_in_member_leaf == 1.0  # its "0.0" entry was never explored
