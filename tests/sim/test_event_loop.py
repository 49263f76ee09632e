from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.sim import EventLoop, RngStreams, SimClock


def _random_run(seed: int) -> list[tuple[float, int]]:
    """A self-scheduling workload whose events spawn more events at random times."""
    loop = EventLoop()
    rng = RngStreams(seed).stream("events")
    log: list[tuple[float, int]] = []

    def fire(ident: int, depth: int) -> None:
        log.append((loop.now, ident))
        if depth < 3:
            for k in range(int(rng.integers(0, 3))):
                loop.call_after(float(rng.choice([0.0, 0.5, 1.0])), fire, ident * 10 + k, depth + 1)

    for i in range(20):
        loop.call_at(float(rng.integers(0, 5)), fire, i, 0)
    loop.run()
    return log


def test_same_seed_gives_identical_event_sequence() -> None:
    a, b = _random_run(7), _random_run(7)
    assert a == b and len(a) > 20
    assert _random_run(8) != a


def test_ties_fire_in_priority_then_scheduling_order() -> None:
    loop = EventLoop()
    order: list[str] = []
    loop.call_at(1.0, order.append, "b")
    loop.call_at(1.0, order.append, "c")
    loop.call_at(1.0, order.append, "a", priority=-1)
    loop.call_at(0.5, order.append, "first")
    loop.call_at(1.0, order.append, "late-priority", priority=5)
    loop.run()
    assert order == ["first", "a", "b", "c", "late-priority"]


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 2)), min_size=1, max_size=60))
def test_events_fire_sorted_by_time_priority_then_insertion(spec: list[tuple[int, int]]) -> None:
    loop = EventLoop()
    fired: list[tuple[int, int, int]] = []
    for seq, (t, prio) in enumerate(spec):
        loop.call_at(float(t), fired.append, (t, prio, seq), priority=prio)
    loop.run()
    assert fired == sorted(fired)


def test_cancel_prevents_firing_and_reports_state() -> None:
    loop = EventLoop()
    seen: list[int] = []
    h1 = loop.call_at(1.0, seen.append, 1)
    h2 = loop.call_at(2.0, seen.append, 2)
    loop.call_at(1.5, lambda: loop.cancel(h2))
    assert loop.cancel(h1) is True
    assert loop.cancel(h1) is False  # already cancelled
    assert loop.pending == 2
    loop.run()
    assert seen == []
    assert loop.pending == 0
    assert not h2.pending and h2.cancelled


def test_run_until_stops_at_the_horizon_and_resumes() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    seen: list[float] = []
    for t in (1.0, 2.0, 3.0, 4.0):
        loop.call_at(t, lambda: seen.append(clock.now()))
    assert loop.run(until=2.5) == 2
    assert loop.now == 2.5 and seen == [1.0, 2.0]
    assert loop.run(until=3.0) == 1  # an event exactly at `until` fires
    loop.run()
    assert seen == [1.0, 2.0, 3.0, 4.0] and loop.now == 4.0


def test_scheduling_in_the_past_or_at_nan_is_rejected() -> None:
    loop = EventLoop(start=5.0)
    with pytest.raises(ValueError, match="past"):
        loop.call_at(4.0, lambda: None)
    with pytest.raises(ValueError, match="finite"):
        loop.call_at(float("nan"), lambda: None)
    with pytest.raises(ValueError, match="delay"):
        loop.call_after(-1.0, lambda: None)


def test_named_streams_are_independent_of_request_order() -> None:
    a = RngStreams(42)
    first = a.stream("arrivals").random(5)
    b = RngStreams(42)
    b.stream("a-new-consumer").random(100)  # a consumer added before: must not shift others
    assert np.array_equal(b.stream("arrivals").random(5), first)
    assert not np.array_equal(RngStreams(43).stream("arrivals").random(5), first)
    assert not np.array_equal(a.fresh("lengths").random(5), a.fresh("arrivals").random(5))
    assert np.array_equal(
        a.child("sub").stream("x").random(3), RngStreams(42).child("sub").stream("x").random(3)
    )
