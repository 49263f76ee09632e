"""Time-to-accuracy, participant-rounds and accuracy distributions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl.learning import (
    AccuracyStats,
    EvalPoint,
    History,
    participant_rounds_to_accuracy,
    speedup,
    time_to_accuracy,
)


def _history(accs: list[float]) -> History:
    h = History()
    for i, a in enumerate(accs):
        h.append(EvalPoint(i * 10, i * 100.0, i * 40, i * 52, AccuracyStats.of(np.array([a])), 0.0))
    return h


def test_time_and_resources_to_accuracy() -> None:
    h = _history([0.1, 0.5, 0.4, 0.8, 0.9])
    assert time_to_accuracy(h, 0.5) == 100.0 and time_to_accuracy(h, 0.85) == 400.0
    assert time_to_accuracy(h, 0.95) is None
    assert participant_rounds_to_accuracy(h, 0.8) == 120
    assert participant_rounds_to_accuracy(h, 0.8, dispatched=True) == 156
    assert speedup(400.0, 200.0) == 2.0 and speedup(None, 1.0) is None
    assert h.best() == pytest.approx(0.9) and h.final.round == 40


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=200))
def test_accuracy_stats_match_numpy(accs: list[float]) -> None:
    a = np.array(accs)
    s = AccuracyStats.of(np.r_[a, np.nan])  # clients without test data are left out
    assert s.clients == len(a)
    assert s.mean == pytest.approx(a.mean()) and s.variance == pytest.approx(a.var(), abs=1e-12)
    assert s.p10 == pytest.approx(np.percentile(a, 10)) and s.p10 <= s.p90


def test_weighted_mean_and_empty() -> None:
    s = AccuracyStats.of(np.array([1.0, 0.0]), weights=np.array([3, 1]))
    assert s.mean == 0.75 and s.variance == 0.25
    assert np.isnan(AccuracyStats.of(np.array([np.nan])).mean)
