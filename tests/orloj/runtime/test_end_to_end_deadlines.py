"""End-to-end deadlines: time lost before the server counts.

A slow proxy on a real socket holds back about half of the requests by 1.5 x the SLO before
they reach the server. Judged by its own arrival stamp the server finishes nearly all of them;
the client, which judges each answer on receipt, sees every held-back one late. Loadgen
reports both and makes the client's the headline. With the client's send stamp the server
starts the deadline where the client did, and its verdict agrees with the client's."""

from __future__ import annotations

import random
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.orloj.runtime.calibrate import CalibrationConfig
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.loadgen import LoadReport, TraceItem, run_load
from kairos.orloj.runtime.models import EarlyExitCNN
from kairos.orloj.runtime.server import RuntimeSettings, create_app, transit_ms
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from kairos.runtime.http import BackgroundServer
from tests.orloj.runtime.slow_proxy import slow_proxy

SLO_MS = 200.0
HOLD_S = 1.5 * SLO_MS / 1e3  # what the proxy adds to a held-back chunk
SIZES = (1, 2)
N = 40


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    model = EarlyExitCNN(stage_blocks=(1, 1, 1, 1))
    worker = ThreadExecutor(model, warm_sizes=SIZES)
    cal = worker.calibrate(CalibrationConfig(batch_sizes=SIZES, solo_runs=3, batch_reps=1))
    options = served_options("orloj", {})
    policy = make_system(
        "orloj", model=cal.batch_model, slo_ms=SLO_MS, sizes=SIZES, options=options
    )
    apps = {"easy": ("exit1",)}
    d = Dispatcher(policy, model, worker, offline=cal.app_profile(apps, 200))
    with BackgroundServer(create_app(d, apps, RuntimeSettings(log_level="critical"))) as srv:
        yield srv.url


def _through_proxy(url: str, stamp: bool, seed: int) -> LoadReport:
    rng = random.Random(seed)
    trace = [TraceItem(25.0 * i, "easy", {"exit": 1, "seed": i}) for i in range(N)]
    port = urlparse(url).port
    assert port is not None
    with slow_proxy(port, lambda: HOLD_S if rng.random() < 0.5 else 0.0) as proxied:
        return run_load(proxied, trace, SLO_MS, stamp=stamp)


def test_time_lost_before_the_server_counts_at_the_client_and_with_the_stamp_at_the_server(
    server_url: str,
) -> None:
    blind = _through_proxy(server_url, stamp=False, seed=1)
    s = blind.summary()
    print(f"\nno stamp: client {s['finish_rate']:.3f}, server {s['server_finish_rate']:.3f}")
    assert s["requests"] == N and {r.status for r in blind.replies} == {200}
    # the server times from its own arrival stamp: it never sees the proxy's hold
    assert all(r.transit_ms == 0.0 for r in blind.replies)
    assert s["server_finish_rate"] >= 0.9
    # ...while every held-back request reached the client after its deadline
    held = [r for r in blind.replies if r.latency_ms > HOLD_S * 1e3]
    assert len(held) >= N // 5  # about half were held (binomial; 8 of 40 is far in its tail)
    assert not any(r.on_time for r in held)
    assert all(r.on_time == (r.outcome == "ok" and r.latency_ms <= SLO_MS) for r in blind.replies)
    assert s["finish_rate"] <= s["server_finish_rate"] - len(held) / N + 0.05
    assert s["ok_but_late_at_client"] >= len(held) - 2

    stamped = _through_proxy(server_url, stamp=True, seed=2)
    t = stamped.summary()
    print(f"stamped: client {t['finish_rate']:.3f}, server {t['server_finish_rate']:.3f}")
    assert t["requests"] == N and {r.status for r in stamped.replies} == {200}
    late_by_stamp = [r for r in stamped.replies if r.transit_ms > SLO_MS]
    assert len(late_by_stamp) >= N // 5  # the server saw the hold in the client's stamp
    assert all(r.outcome != "ok" for r in late_by_stamp)  # and judged those by it
    # only the answer's way back (unheld) separates the two verdicts now
    assert t["server_finish_rate"] - t["finish_rate"] <= 0.05
    assert t["finish_rate"] >= 0.9 * (1 - len(late_by_stamp) / N)


@given(sent=st.floats(1.0, 1e13), now=st.floats(1.0, 1e13))
def test_transit_is_never_negative_and_is_the_stamps_age(sent: float, now: float) -> None:
    got = transit_ms(sent, now)
    assert got >= 0.0
    assert got == (now - sent if now >= sent else 0.0)  # a clock ahead buys no later deadline
    assert transit_ms(None, now) == 0.0
