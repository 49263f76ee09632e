"""One driver: the real Orloj server decides what the simulator's driver decides.

The real side is the HTTP server over a real socket, its dispatcher (the one driver on the
wall clock) running a small early-exit CNN in PyTorch on a worker thread, loaded by the open-
loop load generator with a recorded trace of bursts, each more than one full batch of
requests sent at once, so the policy batches several requests at a time and drops what can no
longer make its deadline, under Orloj and under Clockwork (whose wake-up timers and action
windows the replay must reproduce too). The dispatcher writes every decision to a decision
log; `Tap` notes the driver's inputs with the clock reading it handled each at. The
simulator's driver then runs on a `SimClock` over a worker that hands each batch back with
its measured times, fed the same inputs at the same readings: it must make the decisions the
log holds, at the same times, whatever the machine's speed was (the replay uses what was
measured, not a model of it). An altered recorded decision must be found where it was
altered, and the other policy, replayed on the same inputs, must decide otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from kairos.decisions import (
    DecisionLog,
    Entries,
    Entry,
    altered,
    first_divergence,
    is_plain,
    read_log,
)
from kairos.orloj.decisions import CODEC, BatchDecision, Drop
from kairos.orloj.policy import BatchPolicy
from kairos.orloj.profiler import Profiler
from kairos.orloj.runtime.calibrate import Calibration, CalibrationConfig
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.loadgen import TraceItem, run_load
from kairos.orloj.runtime.models import EarlyExitCNN
from kairos.orloj.runtime.server import RuntimeSettings, create_app
from kairos.orloj.speed import served_options
from kairos.orloj.systems import make_system
from kairos.runtime.http import BackgroundServer
from tests.orloj.runtime.replay import Inputs, Tap, replay

SIZES = (1, 2, 4, 8)
APPS = {"easy": ("exit1",), "hard": ("exit4",)}
# Bursts of 32 requests sent at once: four batches of the largest size, while the SLO is two
# such batches (at the calibration's speed): the slack lets batches fill, and a burst's tail
# cannot make it unless the machine runs twice as fast as calibrated. A burst every ten batch
# times: each queue empties before the next burst.
BURSTS, BURST = 6, 32
REQUESTS = BURSTS * BURST
HARD = 0.75  # the share of hard requests (early exit after the last, costliest stage)
SLO_MULT = 2.0  # x the time of a batch of 8 hard requests at the calibration
GAP_MULT = 10.0
# Every eighth request is a hard one whose SLO is a tenth of the hard class's solo latency:
# Orloj, which knows that latency from the calibration (and scales it by at most 1/4 when the
# machine runs faster, `speed.MIN_FACTOR`), rejects it on arrival whatever the machine's speed.
# Clockwork aims no earlier than 15 ms after an arrival and may run it (late) when its recent
# batches of one were all cheap; its drops come from the bursts' tails.
IMPOSSIBLE_EVERY, IMPOSSIBLE_SLO = 8, 0.1
DROPPED = {"orloj": 10, "clockwork": 1}  # requests at least


def _policy(name: str, cal: Calibration, slo: float) -> BatchPolicy:
    options = served_options(name, {})  # as `kairos orloj serve` runs it
    return make_system(name, model=cal.batch_model, slo_ms=slo, sizes=SIZES, options=options)


Served = tuple[str, Inputs, list[Entry], Calibration, float]
OTHER = {"orloj": "clockwork", "clockwork": "orloj"}


@pytest.fixture(scope="module", params=sorted(OTHER))
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """A real run under a policy: its name, inputs, decisions (read back from the decision
    log it wrote), calibration and SLO."""
    name: str = request.param
    model = EarlyExitCNN(stage_blocks=(1, 2, 2, 48))
    worker = ThreadExecutor(model, warm_sizes=SIZES)
    cal = worker.calibrate(CalibrationConfig(batch_sizes=SIZES, solo_runs=3, batch_reps=1))
    batch_ms = float(cal.batch_model.g(SIZES[-1], cal.solo_median("exit4")))
    slo = SLO_MULT * batch_ms
    path = tmp_path_factory.mktemp(name) / "decisions.jsonl"
    log = DecisionLog(path, CODEC, "orloj", {"policy": name})
    d = Dispatcher(_policy(name, cal, slo), model, worker, profiler=Profiler(),
                   offline=cal.app_profile(APPS, 100), recorder=log)  # fmt: skip
    trace = _bursts(model, GAP_MULT * batch_ms, IMPOSSIBLE_SLO * cal.solo_median("exit4"))
    with BackgroundServer(create_app(d, APPS, RuntimeSettings(log_level="critical"))) as srv:
        assert d.driver is not None
        tap = Tap(d.driver)
        report = run_load(srv.url, trace, slo, stamp=False)
    log.close()
    # a send can fail on a loaded machine's loopback (a dropped connection): the replay is of
    # what reached the driver, so a few such failures are tolerated, not more
    statuses = Counter(r.status for r in report.replies)
    assert statuses[200] >= 0.95 * REQUESTS, statuses
    decisions = read_log(path, CODEC, system="orloj")
    assert decisions.meta == {"policy": name} and len(decisions.entries) == log.count
    yield name, tap.inputs, decisions.entries, cal, slo


def _bursts(model: EarlyExitCNN, gap_ms: float, impossible_ms: float) -> list[TraceItem]:
    rng = np.random.default_rng(5)
    items = []
    for i in range(REQUESTS):
        impossible = i % IMPOSSIBLE_EVERY == IMPOSSIBLE_EVERY - 1
        app = "hard" if impossible or rng.random() < HARD else "easy"
        x = model.random_input(APPS[app][0], rng)
        items.append(TraceItem(i // BURST * gap_ms, app, x, impossible_ms if impossible else None))
    return items


def _replayed(served: Served, name: str) -> Entries:
    _, inputs, _, cal, slo = served
    return replay(inputs, _policy(name, cal, slo), cal.app_profile(APPS, 100), Profiler())


def test_the_simulators_driver_replays_the_real_servers_decisions(served: Served) -> None:
    name, inputs, real, _, _ = served
    # a run worth replaying: the requests reached the driver, batches of several ran, the
    # policy dropped requests (at arrival or while batching), each request decided once
    reached = len(inputs.arrivals)
    assert reached >= 0.95 * REQUESTS
    batches = [e.record for e in real if isinstance(e.record, BatchDecision)]
    drops = [e.record for e in real if isinstance(e.record, Drop)]
    print(
        f"\nbatch sizes {Counter(b.size for b in batches)}, dropped {[len(x.ids) for x in drops]}"
    )
    assert max(b.size for b in batches) >= 4, batches
    assert sum(len(x.ids) for x in drops) >= DROPPED[name], drops
    assert sum(b.size for b in batches) + sum(len(x.ids) for x in drops) == reached
    assert all(is_plain(e.record) and CODEC.loads(CODEC.dumps(e)) == e for e in real)

    if name == "clockwork":  # its wake-ups fired late on the wall clock: the replay needs them
        assert any(t.name == "_on_timer" and t.fired is not None for t in inputs.timers)
    sim = _replayed(served, name)
    divergence = first_divergence(real, sim)
    assert divergence is None, str(divergence)

    # the comparison notices one altered decision, where it was altered
    k = next(i for i, e in enumerate(real) if isinstance(e.record, BatchDecision)
             and e.record.size > 1)  # fmt: skip
    changed = altered(real, k, ids=tuple(reversed(real[k].record.ids)))
    found = first_divergence(changed, sim)
    assert found is not None and found.index == k, str(found)


def test_another_policy_replayed_on_the_same_inputs_decides_otherwise(served: Served) -> None:
    name, _, real, _, _ = served
    divergence = first_divergence(real, _replayed(served, OTHER[name]))
    assert divergence is not None
    print(f"\n{divergence}")
