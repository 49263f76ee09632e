"""The base of the one-batch-at-a-time baselines: a rule that says only how many to take runs
one batch at a time from its queue, with what its `drop` says dropped."""

from __future__ import annotations

import itertools

from kairos.orloj.policies import OneBatchPolicy
from kairos.orloj.policy import Outcome, Request
from kairos.orloj.simulator import simulate


class TakeTwo(OneBatchPolicy):
    name = "take-two"

    def drop(self, now: float) -> list[Request]:
        return self.queue.drop_front(lambda r: r.deadline <= now)

    def size(self, now: float) -> int:
        return min(2, len(self.queue))


def test_a_rule_of_one_method_runs_one_batch_at_a_time_and_drops_what_it_says() -> None:
    # bursts of five every 10 ms, each request 4 ms alone (a batch of two: about 9 ms)
    requests = [Request(i, "a", 10.0 * (i // 5), 12.0, solo_ms=4.0) for i in range(50)]
    result = simulate(TakeTwo(), requests)
    runs = [b for b in result.batches if not b.rejected]
    assert runs and all(1 <= b.size <= 2 for b in runs)
    assert any(b.size == 2 for b in runs)
    assert all(b.start >= a.end for a, b in itertools.pairwise(runs))
    outcomes = {r.outcome for r in result.requests}
    assert Outcome.TIMED_OUT in outcomes and Outcome.OK in outcomes  # the bursts overflow
    assert sum(b.size for b in runs) + sum(r.outcome is Outcome.TIMED_OUT for r in requests) == 50
    assert result.stranded == 0


def test_the_base_hands_out_no_second_batch_while_one_is_out() -> None:
    policy = TakeTwo()
    for i in range(5):
        policy.on_arrival(Request(i, "a", 0.0, 100.0), 0.0)
    first, _ = policy.next_batch(1.0)
    assert first is not None and first.size == 2 and policy.pending() == 3
    assert policy.next_batch(2.0) == (None, [])  # the worker still has the first
    policy.on_batch_done(first, 5.0, 4.0)
    second, dropped = policy.next_batch(200.0)  # past every deadline: all three dropped
    assert second is None and [r.request_id for r in dropped] == [2, 3, 4]
