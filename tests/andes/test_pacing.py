"""Buffer-paced admission (`policies/pacing.py`): the slack read off the QoE state, and the
cut before the first prefill the running users' buffers cannot absorb."""

from __future__ import annotations

import math

import pytest

from kairos.andes.latency import LinearProfile
from kairos.andes.policies.andes import AndesConfig
from kairos.andes.policies.pacer import PacingConfig
from kairos.andes.policies.pacing import buffered_slack, pace_admissions
from kairos.andes.policy import SchedulerView
from kairos.andes.request import Request, RequestView, Status

PROFILE = LinearProfile(
    name="t",
    decode_coef=(0.01, 0.0, 0.0),
    prefill_coef=(0.01, 1e-3, 0.0),  # a prompt of n tokens alone: 0.01 + n/1000 s
    swap_s_per_token=0.0,
    kv_capacity=100_000,
    swap_capacity=0,
)


def req(i: int, prompt: int = 500, arrival: float = 0.0) -> Request:
    return Request(
        request_id=str(i),
        arrival=arrival,
        prompt_len=prompt,
        max_tokens=100,
        ttft_s=1.0,
        tokens_per_s=4.0,
    )


def streaming(times: list[float]) -> Request:
    r = req(99)
    r.status, r.computed = Status.RUNNING, r.prompt_len
    for t in times:
        r.deliver(t)
    return r


def view(running: list[Request], now: float) -> SchedulerView:
    return SchedulerView(
        now=now,
        iteration=0,
        running=running,
        waiting=[],
        swapped=[],
        free_blocks=1000,
        total_blocks=1000,
        free_cpu_blocks=0,
        block_size=16,
        latency=PROFILE,
        max_num_seqs=512,
        max_num_batched_tokens=200_000,
        watermark_blocks=10,
    )


def test_slack_is_when_the_user_runs_dry() -> None:
    # 8 tokens early (before their ideal times 1, 1.25, ...): lag 0, token 9 due at 1 + 8/4
    on_time = streaming([0.5 + 0.01 * j for j in range(8)])
    assert buffered_slack([on_time], 1.2) == pytest.approx(3.0 - 1.2)
    # the first token 2 s late: every later ideal time shifts by the lag
    late = streaming([3.0, 3.1])
    assert buffered_slack([late], 3.2) == pytest.approx(1.0 + 2 / 4 + 2.0 - 3.2)
    assert buffered_slack([on_time, late], 3.2) == pytest.approx(3.0 - 3.2)
    assert math.isinf(buffered_slack([], 0.0))


def test_admissions_stop_before_the_prefill_the_buffers_cannot_absorb() -> None:
    user = streaming([0.5 + 0.01 * j for j in range(8)])  # slack 1.8 s at t = 1.2
    swapped = req(50)
    swapped.status = Status.SWAPPED  # a swap-in, not a prefill: not counted
    queue: list[RequestView] = [req(1), req(2), swapped, req(3), req(4)]
    # prompts of 500 tokens: 1, 2, 3, 4 together take 0.51, 1.01, 1.51, 2.01 s
    assert pace_admissions(view([user], 1.2), queue, 1.0) == queue[:4]
    assert pace_admissions(view([user], 1.2), queue, 1.5) == queue[:3]
    assert pace_admissions(view([user], 1.2), queue, 4.0) == []
    assert pace_admissions(view([], 1.2), queue, 1.0) == queue  # nobody streaming


def test_pacing_is_on_by_default_as_issue_17s_candidate() -> None:
    """The default (docs/andes.md, "Pacing: the default")."""
    candidate = PacingConfig(
        margin=0.65, order="shortest", between_solves=True, overtake=22, overtake_per_waiting=2
    )
    assert AndesConfig().pacing == candidate
    assert AndesConfig(pacing=None).pacing is None  # the paper's Andes
    with pytest.raises(ValueError):
        PacingConfig(margin=0.0)
    with pytest.raises(ValueError):
        AndesConfig(pacing={"margin": 0.0})
