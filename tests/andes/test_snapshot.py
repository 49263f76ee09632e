"""The scheduler's numpy mirror gives exactly what reading the request objects gives."""

from __future__ import annotations

import dataclasses

import numpy as np

from kairos.andes.latency import LinearProfile
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.snapshot import take_snapshot
from kairos.andes.request import Request
from kairos.andes.scheduler import Scheduler


def test_table_snapshot_equals_object_snapshot_through_a_run() -> None:
    lat = LinearProfile(
        name="tiny",
        decode_coef=(0.01, 0.001, 0.0),
        prefill_coef=(0.01, 1e-4, 0.0),
        swap_s_per_token=1e-5,
        kv_capacity=320,
        swap_capacity=160,
    )
    sched = Scheduler(FCFSPolicy(), lat)
    rng = np.random.default_rng(0)
    now = 0.0
    for i in range(12):
        sched.add_request(Request(str(i), now, int(rng.integers(5, 60)), 40, 1.0, 4.0))
        now += 0.05
    checked = 0
    for _ in range(60):
        out = sched.schedule(now)
        now += 0.02
        stop = [s.request.request_id for s in out.steps if s.samples and rng.random() < 0.05]
        sched.update_from_output(out, now, stop)
        view = sched.view(now)
        if not (view.running or view.waiting or view.swapped):
            break
        fast = take_snapshot(view, True)
        slow = take_snapshot(dataclasses.replace(view, table=None), True)
        for f in ("arrival", "ttft", "speed", "delivered", "lag", "lag_sum", "remaining_cap"):
            assert np.array_equal(getattr(fast.state, f), getattr(slow.state, f)), f
        assert np.array_equal(fast.blocks, slow.blocks)
        assert np.array_equal(fast.running, slow.running)
        assert np.array_equal(fast.start_delay, slow.start_delay)
        checked += 1
    assert checked > 20
