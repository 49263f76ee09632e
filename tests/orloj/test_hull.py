from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.orloj.hull import BruteForceIndex, HullIndex, PriorityIndex, make_index

Point = tuple[float, float, float]  # alpha, beta, tie


def best(points: dict[int, Point], x: float) -> int:
    """The spec's order, by definition: larger fl(αx + β), then smaller tie, then smaller id."""
    return min(points, key=lambda i: (-(points[i][0] * x + points[i][1]), points[i][2], i))


def both() -> tuple[HullIndex, BruteForceIndex]:
    return HullIndex(capacity=2), BruteForceIndex(capacity=2)


def test_random_operations_give_identical_answers() -> None:
    """10^4 random insert/delete/update/update_many/argmax/pop_top operations."""
    rng = np.random.default_rng(0)
    hull, brute = both()
    points: dict[int, Point] = {}
    next_id, x, answers = 0, 1.0, 0
    for step in range(10_000):
        op = rng.random()
        if op < 0.33 or not points:
            # a mix of generic points and the scheduler's shapes: β = 0 rows, shared β, origin
            kind = rng.integers(4)
            alpha: float = float(rng.normal()) * (10.0 ** rng.integers(-3, 3))
            beta = [float(rng.normal()), 0.0, 0.5, 0.0][kind]
            if kind == 3:
                alpha = 0.0
            tie = float(rng.integers(0, 50))
            for index in (hull, brute):
                index.insert(next_id, alpha, beta, tie)
            points[next_id] = (alpha, beta, tie)
            next_id += 1
        elif op < 0.5:
            item = int(rng.choice(list(points)))
            for index in (hull, brute):
                index.delete(item)
            del points[item]
        elif op < 0.65:
            items = [
                int(i) for i in rng.choice(list(points), size=min(len(points), 5), replace=False)
            ]
            alphas, betas = rng.normal(size=len(items)), rng.normal(size=len(items))
            if rng.random() < 0.5:
                for index in (hull, brute):
                    index.update(items[0], float(alphas[0]), float(betas[0]))
                items = items[:1]
            else:
                for index in (hull, brute):
                    index.update_many(items, alphas.tolist(), betas.tolist())
            for i, a, b in zip(items, alphas, betas, strict=False):
                points[i] = (float(a), float(b), points[i][2])
        elif op < 0.97:
            # x mostly grows (time moves on), sometimes resets to a smaller value
            x = (
                x * math.exp(rng.exponential(0.05))
                if rng.random() < 0.95
                else float(rng.uniform(0.1, 3))
            )
            want = best(points, x)
            assert hull.argmax(x) == brute.argmax(x) == want, step
            answers += 1
        else:
            k = int(rng.integers(1, min(len(points), 6) + 1))
            got = hull.pop_top(x, k)
            assert got == brute.pop_top(x, k)
            for item in got:
                assert item == best(points, x)
                del points[item]
        assert len(hull) == len(brute) == len(points)
    assert answers > 2000


def test_equal_alphas_collinear_points_and_ties() -> None:
    for kind in ("hull", "bruteforce"):
        index = make_index(kind)
        # equal α: the larger β wins at any x
        index.insert(1, 2.0, 1.0, 5.0)
        index.insert(2, 2.0, 3.0, 9.0)
        assert index.argmax(1.0) == 2 and index.argmax(1e6) == 2
        index.delete(1)
        index.delete(2)
        # collinear on a line of slope -2: at x = 2 all five score exactly 10
        for i, a in enumerate([0.0, 1.0, 2.0, 3.0, 4.0]):
            index.insert(10 + i, a, 10.0 - 2.0 * a, tie=[7.0, 3.0, 3.0, 8.0, 5.0][i])
        assert index.argmax(2.0) == 11  # earliest deadline (3.0), then the lower id
        assert index.argmax(2.5) == 14  # just past the tie the steepest wins
        assert index.argmax(1.5) == 10
        # duplicates: the tie key, then the id
        index.insert(30, 1.0, 1.0, 4.0)
        index.insert(29, 1.0, 1.0, 4.0)
        for i in range(10, 15):
            index.delete(i)
        assert index.pop_top(1.0, 2) == [29, 30]
        # a single point, and points at the origin (hopeless requests)
        index.insert(40, 0.0, 0.0, 2.0)
        assert index.argmax(123.0) == 40
        index.insert(41, 0.0, 0.0, 1.0)
        assert index.argmax(0.5) == 41
        assert len(index) == 2


@settings(max_examples=300, deadline=None)
@given(
    pts=st.lists(
        st.tuples(st.integers(-4, 4), st.integers(-4, 4), st.integers(0, 3)),
        min_size=1,
        max_size=30,
    ),
    xs=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0, 4.0]), min_size=1, max_size=8),
)
def test_small_integer_point_sets_with_many_exact_ties(
    pts: list[tuple[int, int, int]], xs: list[float]
) -> None:
    points = {i: (float(a), float(b), float(t)) for i, (a, b, t) in enumerate(pts)}
    hull, brute = both()
    for i, (a, b, t) in points.items():
        hull.insert(i, a, b, t)
        brute.insert(i, a, b, t)
    for x in xs:
        assert hull.argmax(x) == brute.argmax(x) == best(points, x)


def test_near_ties_in_floating_point_follow_the_scan() -> None:
    """Lines crossing within rounding of the query points: the certificates must not lag."""
    rng = np.random.default_rng(1)
    hull, brute = both()
    points: dict[int, Point] = {}
    x_cross = 1.7
    for i in range(200):
        a = float(rng.normal())
        b = 3.0 - a * x_cross  # every line passes (almost) through (1.7, 3)
        b = float(np.nextafter(b, b + rng.choice([-1, 1]) * rng.integers(0, 2)))
        points[i] = (a, b, float(i % 7))
        hull.insert(i, a, b, points[i][2])
        brute.insert(i, a, b, points[i][2])
    xs = np.concatenate([x_cross + np.linspace(-1e-12, 1e-12, 201), np.linspace(1.0, 3.0, 50)])
    for x in np.sort(xs):
        assert hull.argmax(float(x)) == brute.argmax(float(x)) == best(points, float(x))


def test_query_points_over_a_whole_time_base_window() -> None:
    """x = e^{bt'} spans e^0 … e^100 before a reset; the answers stay identical."""
    rng = np.random.default_rng(2)
    hull, brute = both()
    for i in range(500):
        a, b = float(rng.uniform(-1, 1)) * math.exp(-rng.uniform(0, 100)), float(rng.uniform(0, 1))
        hull.insert(i, a, b, float(i))
        brute.insert(i, a, b, float(i))
    for x in np.exp(np.linspace(0, 100, 400)):
        assert hull.argmax(float(x)) == brute.argmax(float(x))


def test_bad_input_is_rejected() -> None:
    index: PriorityIndex
    for index in both():
        index.insert(1, 0.0, 0.0)
        with pytest.raises(KeyError):
            index.insert(1, 1.0, 1.0)
        with pytest.raises(ValueError, match="finite"):
            index.insert(2, math.nan, 0.0)
        with pytest.raises(ValueError, match="positive"):
            index.argmax(0.0)
        with pytest.raises(ValueError, match="cannot pop"):
            index.pop_top(1.0, 2)
        index.delete(1)
        with pytest.raises(ValueError, match="empty"):
            index.argmax(1.0)
        with pytest.raises(KeyError):
            index.delete(1)
    with pytest.raises(ValueError, match="hull"):
        make_index("treap")


def test_certificates_are_conservative_at_a_crossing() -> None:
    """Two lines whose fl order flips within ~1000 ulps of their computed crossing: a tree
    that trusted the crossing point (no error margin) would answer stale here."""
    rng = np.random.default_rng(3)
    for _ in range(100):
        hull, brute = both()
        a_w = float(rng.uniform(0.5, 2))
        a_l = a_w + float(rng.uniform(1e-4, 1e-2))
        cross, b_w = float(rng.uniform(1, 2)), float(rng.uniform(-1, 1))
        b_l = b_w - (a_l - a_w) * cross
        for i, (a, b) in enumerate([(a_w, b_w), (a_l, b_l)]):
            hull.insert(i, a, b, float(i))
            brute.insert(i, a, b, float(i))
        hull.argmax(1.0)
        for x in cross * (1 + np.arange(-3000, 3000, 7) * 1e-16):
            assert hull.argmax(float(x)) == brute.argmax(float(x))
