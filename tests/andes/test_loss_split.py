"""The QoE loss split (first-token wait vs stalls after it) on timelines with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.andes.loss_split import loss_split, timeline_qoe
from kairos.andes.qoe import qoe_at
from kairos.andes.request import Request


def request(
    times: list[float], arrival: float = 0.0, ttft: float = 1.0, speed: float = 4.0
) -> Request:
    r = Request(
        request_id="r",
        arrival=arrival,
        prompt_len=10,
        max_tokens=max(len(times), 1),
        ttft_s=ttft,
        tokens_per_s=speed,
    )
    r.token_times = list(times)
    return r


def test_timeline_qoe_is_the_definition_on_random_timelines() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        times = np.sort(rng.uniform(0, 30, n))
        arrival, ttft, speed = rng.uniform(0, 5), rng.uniform(0.5, 3), rng.uniform(2, 6)
        assert timeline_qoe(times, arrival, ttft, speed) == pytest.approx(
            qoe_at(times, arrival, ttft, speed), abs=1e-12
        )


def test_a_late_first_token_then_reading_pace_is_all_first_token_loss() -> None:
    n, speed, late = 20, 4.0, 3.0
    times = [1.0 + late + j / speed for j in range(n)]  # due at 1 + j/s, each `late` behind
    split = loss_split([request(times, speed=speed)])
    expected = 1 - late / (late + (n - 1) / (2 * speed))  # every lag is `late`
    assert split.actual == pytest.approx(expected)
    assert split.ttft_only == pytest.approx(expected)
    assert split.stall_only == pytest.approx(1.0)


def test_a_stall_after_an_on_time_first_token_is_all_stall_loss() -> None:
    speed = 4.0
    times = [0.5 + j / speed for j in range(5)] + [6.0 + j / speed for j in range(15)]
    split = loss_split([request(times, speed=speed)])
    assert split.ttft_only == pytest.approx(1.0)
    assert split.stall_only == pytest.approx(split.actual, abs=1e-12)
    assert split.actual < 0.9


def test_requests_without_a_token_are_left_out() -> None:
    split = loss_split([request([]), request([0.5, 0.75])])
    assert split.actual == split.ttft_only == split.stall_only == 1.0
    empty = loss_split([request([])])
    assert np.isnan(empty.actual)
