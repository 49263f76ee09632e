"""The anti-starvation rule (policies/starvation.py): who counts as starved, and that Andes
admits a starved long prompt ahead of the short ones it would rather serve."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.gain import StreamState
from kairos.andes.latency import LinearProfile
from kairos.andes.policies.andes import AndesConfig, AndesPolicy
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.starvation import put_first, starved
from kairos.andes.request import Request
from kairos.andes.scheduler import Scheduler, SchedulerConfig


def _state(arrival: list[float], delivered: list[int], lag: list[float]) -> StreamState:
    n = len(arrival)
    one = np.ones(n)
    return StreamState(
        arrival=np.array(arrival),
        ttft=one.copy(),
        speed=one.copy(),  # 1 token/s: token k+1 is due at arrival + 1 + k
        delivered=np.array(delivered, dtype=float),
        lag=np.array(lag),
        lag_sum=np.zeros(n),
        remaining_cap=np.full(n, np.inf),
    )


def test_starved_counts_from_when_the_users_text_ran_out() -> None:
    # A: waiting since 0, first token due at 1: at now=4 it is 3 s overdue (> 2 targets)
    # B: waiting since 2.5, due at 3.5: 0.5 s overdue
    # C: preempted after 10 tokens at lag 0: its text lasts until 0 + 1 + 10 = 11
    # D: running, 5 s overdue, but running requests are never "starved"
    state = _state([0.0, 2.5, 0.0, -2.0], [0, 0, 10, 0], [0.0, 0.0, 0.0, 0.0])
    running = np.array([False, False, False, True])
    assert starved(state, 4.0, running, 2.0) == [0]
    assert starved(state, 4.0, running, None) == []  # the rule off
    assert starved(state, 14.0, running, 2.0) == [0, 2, 1]  # oldest first (C arrived at 0)


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(0, 30),
    after=st.floats(0.0, 5.0),
    now=st.floats(0.0, 100.0),
    seed=st.integers(0, 2**32 - 1),
    limit=st.one_of(st.none(), st.integers(1, 5)),
    vs_queue=st.one_of(st.none(), st.floats(0.5, 4.0)),
)
def test_starved_is_overdue_not_running_and_oldest_first(
    n: int, after: float, now: float, seed: int, limit: int | None, vs_queue: float | None
) -> None:
    rng = np.random.default_rng(seed)
    state = _state(
        rng.uniform(0, 100, n).tolist(),
        rng.integers(0, 20, n).tolist(),
        rng.uniform(0, 5, n).tolist(),
    )
    running = rng.random(n) < 0.3
    got = starved(state, now, running, after, limit, vs_queue)
    late = np.maximum(
        now - (state.arrival + state.ttft + state.delivered / state.speed + state.lag), 0
    )
    want = [i for i in range(n) if not running[i] and late[i] > after * state.ttft[i]]
    if vs_queue is not None and want:
        want = [i for i in want if late[i] > vs_queue * late[~running].mean()]
    want = sorted(want, key=lambda i: state.arrival[i])[:limit]
    assert set(got) == set(want) and len(got) == len(want)
    assert all(state.arrival[a] <= state.arrival[b] for a, b in pairwise(got))
    admit = rng.permutation(n).tolist()
    merged = put_first(admit, got)
    assert merged[: len(got)] == got and sorted(merged) == sorted(admit)


def _profile() -> LinearProfile:
    return LinearProfile(
        name="starve",
        decode_coef=(0.01, 0.001, 1e-5),
        prefill_coef=(0.01, 1e-3, 0.0),  # 0.5 s for the long prompt, 0.02 s for a short one
        swap_s_per_token=1e-5,
        kv_capacity=48 * 16,
        swap_capacity=8 * 16,
        block_size=16,
    )


def _queue() -> Scheduler:
    """One long prompt (500 tokens, arrived at 0) and ten short ones (10 tokens, arrived at
    3.5-3.9) waiting; the long one is 2.9 s past its 1.1 s TTFT target at t = 4."""
    sched = Scheduler(FCFSPolicy(), _profile(), SchedulerConfig(watermark=0.0))
    sched.add_request(Request("long", 0.0, 500, 100, 1.1, 5.0))
    for i in range(10):
        sched.add_request(Request(f"s{i}", 3.5 + 0.04 * i, 10, 100, 1.0, 5.0))
    return sched


def test_a_starved_long_prompt_goes_first_with_the_rule_on() -> None:
    # the knapsack's rule alone: paced shortest-first would reorder the admissions
    base = AndesConfig(selective_trigger=False, solve_every=1, pacing=None)
    on = AndesPolicy(base).decide(_queue().view(4.0))
    off = AndesPolicy(base.model_copy(update={"starvation_after": None})).decide(_queue().view(4.0))
    assert on.admit[0].request_id == "long"
    # without the rule Andes prefers the short prompts (gain per block): the long one is last
    assert [r.request_id for r in off.admit][-1] == "long"
    assert {r.request_id for r in on.admit} == {r.request_id for r in off.admit}


def test_a_starved_prompt_that_does_not_fit_is_forced_only_with_the_boost() -> None:
    """With 36 blocks the long prompt (32 blocks) and the ten short ones (1 each) do not all
    fit. Ranked by gain per block the knapsack keeps the short ones, and the rule does not
    force a request the knapsack left out (that blocked admission under bursts); with
    `starvation_boost` the starved request ranks first, so it is selected and admitted first."""

    def queue() -> Scheduler:
        profile = _profile().model_copy(update={"kv_capacity": 36 * 16})
        sched = Scheduler(FCFSPolicy(), profile, SchedulerConfig(watermark=0.0))
        for r in _queue().requests.values():
            sched.add_request(Request(r.request_id, r.arrival, r.prompt_len, 100, r.ttft_s, 5.0))
        return sched

    # the knapsack's rule alone: paced shortest-first would reorder the admissions
    base = AndesConfig(selective_trigger=False, solve_every=1, pacing=None)
    plain = AndesPolicy(base).decide(queue().view(4.0))
    boosted = AndesPolicy(base.model_copy(update={"starvation_boost": True}))
    forced = boosted.decide(queue().view(4.0))
    assert "long" not in {r.request_id for r in plain.admit} and len(plain.admit) == 10
    assert forced.admit[0].request_id == "long" and len(forced.admit) == 5
