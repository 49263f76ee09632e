"""Pacing's aging in seconds and its overdue prompts (`policies/pacing.py`): a bound the same
for every prompt length, overdue prompts the solver passed over, and overdue prompts
admitted together once the first of them fits the buffers."""

from __future__ import annotations

from dataclasses import replace

from kairos.andes.policies.andes import AndesConfig, AndesPolicy
from kairos.andes.policies.overtaking import OvertakeCount
from kairos.andes.policies.pacer import PacingConfig
from kairos.andes.policies.pacing import pace_admissions, paced_order, with_aged
from kairos.andes.request import Request, RequestView, Status
from tests.andes.test_pacing import view


def prompt(i: int, tokens: int, arrival: float, ttft: float = 1.0) -> Request:
    return Request(
        request_id=str(i),
        arrival=arrival,
        prompt_len=tokens,
        max_tokens=100,
        ttft_s=ttft,
        tokens_per_s=4.0,
    )


def test_aging_in_seconds_reaches_long_prompts_that_targets_age_late() -> None:
    # at t = 12 the long prompt has waited 12 s: 5 targets of its 2-s TTFT, 12 of a 1-s one
    long_ = prompt(1, 2000, 0.0, ttft=2.0)
    short = prompt(2, 100, 11.5)
    queue = [long_, short]
    assert paced_order(queue, 12.0, "shortest", 8.0) == [short, long_]  # 18 s to age
    assert paced_order(queue, 12.0, "shortest", 8.0, starve_after_s=10.0) == [long_, short]
    assert paced_order(queue, 12.0, "shortest", None, starve_after_s=13.0) == [short, long_]


def test_overdue_prompts_join_an_admission_the_solver_made_without_them() -> None:
    old, new = prompt(1, 500, 0.0), prompt(2, 500, 9.0)
    running = prompt(3, 500, 0.0)
    running.status = Status.RUNNING
    picked = [new]
    v = replace(view([running], 10.0), waiting=[new, old], now=10.0)
    assert with_aged(v, picked, None, 8.0) == [old, new]  # the overdue one first
    assert with_aged(v, picked, None, 11.0) == picked  # none overdue yet
    # 500 tokens are 32 blocks of 16: with the new one's 32 and the watermark's 10, 74 free
    # blocks hold both and 73 do not (a forced prompt that does not fit blocks the rest)
    assert with_aged(replace(v, free_blocks=74), picked, None, 8.0) == [old, new]
    assert with_aged(replace(v, free_blocks=73), picked, None, 8.0) == picked


def test_overdue_prompts_share_the_iteration_of_the_first_that_fits() -> None:
    user = prompt(99, 500, 20.0)  # 8 tokens early: slack 1.8 s at t = 21.2
    user.status, user.computed = Status.RUNNING, user.prompt_len
    for j in range(8):
        user.deliver(20.5 + 0.01 * j)
    v = replace(view([user], 1.2), now=21.2)  # prompts from t = 0 have waited 21 s
    a, b = prompt(1, 500, 0.0), prompt(2, 2000, 0.5)  # alone 0.51 s; together 2.51 s
    fresh = prompt(3, 100, 21.0)
    queue: list[RequestView] = [a, b, fresh]
    assert pace_admissions(v, queue, 1.0, starve_after_s=10.0) == [a]
    together = pace_admissions(v, queue, 1.0, starve_after_s=10.0, aged_together=True)
    assert together == [a, b]  # b joins a; the fresh one still waits for the buffers
    # the first overdue prompt must still fit: together does not bypass pacing for it
    assert pace_admissions(v, queue, 4.0, starve_after_s=10.0, aged_together=True) == []


def test_the_overdue_options_are_off_unless_asked() -> None:
    cfg = PacingConfig()
    assert cfg.starve_after is None and cfg.starve_after_s is None
    assert not (cfg.aged_always or cfg.aged_together)


def test_overtaking_counts_later_prompts_admitted_first() -> None:
    old, mid, new = prompt(1, 4000, 0.0), prompt(2, 100, 1.0), prompt(3, 100, 2.0)
    count = OvertakeCount()
    count.observe([old, mid, new])
    new.status = Status.RUNNING  # the newest started: it passed both earlier prompts
    count.observe([old, mid])
    assert count.count == {"1": 1, "2": 1}
    mid.status = Status.RUNNING  # the middle one passed only the oldest
    count.observe([old])
    assert count.count == {"1": 2}
    assert count.overdue(1) == frozenset({"1"})
    assert count.overdue(2) == frozenset()
    # the bound grows with the queue: 3 x 1 waiting prompt is above 2 overtakes
    assert count.overdue(1, per_waiting=3.0) == frozenset()
    old.status = Status.RUNNING  # admitted: forgotten
    count.observe([])
    assert count.count == {}


def test_an_overtaken_prompt_goes_first_in_shortest_order() -> None:
    long_, short = prompt(1, 2000, 0.0), prompt(2, 100, 5.0)
    assert paced_order([long_, short], 6.0, "shortest", None) == [short, long_]
    aged = frozenset({"1"})
    assert paced_order([long_, short], 6.0, "shortest", None, aged_ids=aged) == [long_, short]
    default = AndesConfig().pacing
    assert default is not None and default.overtake == 22  # the default's aging rule


def test_the_policy_puts_an_overtaken_prompt_first() -> None:
    admitted: dict[int | None, list[str]] = {}
    for k in (None, 0):
        pacing = PacingConfig(
            margin=1.0, order="shortest", between_solves=False, overtake=k, overtake_per_waiting=0
        )
        policy = AndesPolicy(AndesConfig(pacing=pacing))
        old, passer, short = prompt(1, 400, 0.0), prompt(2, 100, 1.0), prompt(3, 100, 2.0)
        policy.decide(replace(view([], 2.0), waiting=[old, passer], now=2.0))
        passer.status = Status.RUNNING  # started before the older, longer prompt
        d = policy.decide(replace(view([passer], 2.1), waiting=[old, short], now=2.1))
        admitted[k] = [r.request_id for r in d.admit]
    assert admitted[None] == ["3", "1"]  # shortest first
    assert admitted[0] == ["1", "3"]  # passed once, more than k = 0: it goes first
