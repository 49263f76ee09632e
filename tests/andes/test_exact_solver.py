from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.policies.exact import solve_exact, solve_exact_all

Instance = tuple[np.ndarray, np.ndarray, int]


def brute_force(gain: np.ndarray, length: np.ndarray, capacity: int, batch: int) -> float | None:
    """Best objective over all subsets of exactly `batch` items that fit, or None."""
    best: float | None = None
    for subset in itertools.combinations(range(len(gain)), batch):
        idx = list(subset)
        if length[idx].sum() <= capacity:
            value = float(gain[idx].sum())
            best = value if best is None else max(best, value)
    return best


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    n = draw(st.integers(0, 9))
    gain = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    capacity = draw(st.integers(0, 25))
    return np.array(gain, dtype=float), np.array(length, dtype=np.int64), capacity


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_matches_brute_force(instance: Instance, data: st.DataObject) -> None:
    gain, length, capacity = instance
    batch = data.draw(st.integers(0, len(gain)))
    expected = brute_force(gain, length, capacity, batch)
    mask = solve_exact(gain, length, capacity, batch)
    if expected is None:
        assert mask is None
        return
    assert mask is not None
    assert mask.dtype == np.bool_ and mask.shape == gain.shape
    assert int(mask.sum()) == batch
    assert int(length[mask].sum()) <= capacity
    assert float(gain[mask].sum()) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(instances(), st.data())
def test_solve_all_picks_best_batch(instance: Instance, data: st.DataObject) -> None:
    _, length, capacity = instance
    n = len(length)
    batches = data.draw(st.lists(st.integers(0, n + 1), min_size=1, max_size=4, unique=True))
    # Gains differ per B, as they do in Andes.
    size = n * len(batches)
    flat = data.draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size))
    gains = np.array(flat, dtype=float).reshape(n, len(batches))
    by_b = {b: brute_force(gains[:, j], length, capacity, b) for j, b in enumerate(batches)}
    feasible = {b: v for b, v in by_b.items() if v is not None}

    result = solve_exact_all(gains, length, capacity, batches)
    if not feasible:
        assert result is None
        return
    assert result is not None
    b, mask, objective = result
    best = max(feasible.values())
    assert objective == pytest.approx(best, abs=1e-9)
    assert feasible[b] == pytest.approx(best, abs=1e-9)
    j = batches.index(b)
    assert int(mask.sum()) == b and int(length[mask].sum()) <= capacity
    assert float(gains[mask, j].sum()) == pytest.approx(objective, abs=1e-9)

    # The callable form must agree with the 2-D array form.
    column = {b: gains[:, j] for j, b in enumerate(batches)}
    again = solve_exact_all(lambda bb: column[bb], length, capacity, batches)
    assert again is not None and again[0] == b and again[2] == pytest.approx(objective)


def test_greedy_by_ratio_is_suboptimal_but_dp_is_not() -> None:
    # B = 2, M = 10. The two best gain/size ratios (items 0 and 1) fit but waste memory;
    # the optimum pairs the small item 0 with the large, valuable item 2.
    gain = np.array([0.50, 0.45, 0.90, 0.85])
    length = np.array([2, 2, 8, 8])
    capacity, batch = 10, 2

    chosen: list[int] = []
    used = 0
    for i in np.argsort(-gain / length, kind="stable"):
        if len(chosen) < batch and used + length[i] <= capacity:
            chosen.append(int(i))
            used += int(length[i])
    greedy = float(gain[chosen].sum())

    mask = solve_exact(gain, length, capacity, batch)
    assert mask is not None
    assert sorted(chosen) == [0, 1]
    assert mask.tolist() == [True, False, True, False]
    assert float(gain[mask].sum()) == pytest.approx(1.40)
    assert greedy < float(gain[mask].sum()) - 0.4


def test_ties_prefer_not_serving_the_later_item() -> None:
    mask = solve_exact(np.array([0.5, 0.5]), np.array([1, 1]), 5, 1)
    assert mask is not None and mask.tolist() == [True, False]


def test_infeasible_returns_none_and_empty_batch_is_feasible() -> None:
    gain, length = np.array([1.0, 1.0, 1.0]), np.array([3, 3, 3])
    assert solve_exact(gain, length, 5, 2) is None  # two items need 6 > 5 blocks
    assert solve_exact(gain, length, 5, 4) is None  # more items than requests
    empty = solve_exact(gain, length, 0, 0)
    assert empty is not None and not empty.any()


def test_zero_size_item_is_counted_once() -> None:
    mask = solve_exact(np.array([1.0, 0.2]), np.array([0, 4]), 4, 2)
    assert mask is not None and mask.tolist() == [True, True]
    assert solve_exact(np.array([1.0]), np.array([0]), 0, 2) is None


def test_solve_all_ties_go_to_the_smaller_batch() -> None:
    length = np.array([1, 1, 1])
    # Columns are B = 3, 2, 1; every B reaches 1.0, and the smallest is listed last.
    gains = np.array([[0.5, 0.5, 1.0], [0.25, 0.5, 0.0], [0.25, 0.0, 0.0]])
    result = solve_exact_all(gains, length, 3, [3, 2, 1])
    assert result is not None
    assert result[0] == 1 and result[1].tolist() == [True, False, False]
    assert result[2] == pytest.approx(1.0)
    assert solve_exact_all(gains[:, :2], length, 1, [3, 2]) is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gain": [1.0, 2.0], "length": [1]}, "gain"),
        ({"gain": [[1.0]], "length": [1]}, "gain"),
        ({"gain": [float("nan")], "length": [1]}, "gain"),
        ({"length": [-1]}, "length"),
        ({"length": [1.5]}, "length"),
        ({"length": [[1]]}, "length"),
        ({"length": ["a"]}, "length"),
        ({"capacity": -1}, "capacity"),
        ({"capacity": 2.5}, "capacity"),
        ({"batch": -1}, "batch"),
    ],
)
def test_solve_exact_rejects_bad_input(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"gain": [1.0], "length": [1], "capacity": 3, "batch": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        solve_exact(**args)


def test_solve_exact_all_rejects_bad_input() -> None:
    length = np.array([1, 2])
    with pytest.raises(ValueError, match="gain_by_b"):
        solve_exact_all(np.ones((2, 3)), length, 3, [1, 2])
    with pytest.raises(ValueError, match="gain_by_b"):
        solve_exact_all(lambda b: np.ones(3), length, 3, [1])
    with pytest.raises(ValueError, match="batches"):
        solve_exact_all(np.ones((2, 0)), length, 3, [])
    with pytest.raises(ValueError, match="batches"):
        solve_exact_all(np.ones((2, 1)), length, 3, [-1])
    with pytest.raises(ValueError, match="capacity"):
        solve_exact_all(np.ones((2, 1)), length, -3, [1])
