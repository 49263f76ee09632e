"""The real stack on the wall clock against the simulator's prediction, stream by stream.

`kairos serve` (the Andes driver on its engine thread, the torch engine as its worker) is
measured for its latency profile, loaded with a bursty `kairos bench` workload over HTTP,
and every stream's QoE is scored from the chunk times the client saw. The simulator (the same
driver with the simulated worker) then runs exactly the requests the client sent with the
fitted profile scaled to the speed this run's engine had (its measured iteration time over the
profile's prediction, from `/metrics`): on a shared machine the profile is measured at one
speed and served at another (once 30x apart here, with another test's worker process at a
raised priority beside it), and the simulator predicts what a speed implies, not the speed.

This is the serving experiment (`kairos andes experiment serving`) at a small size: one
policy, one 40 s cycle, and the offline profile as fitted (no serving-drift calibration run).
The load must matter, or agreement is trivial (at 1.5 req/s every stream met its QoE,
measured and simulated): `RATE` puts bursts past this engine's capacity, so a clear share of
streams miss QoE 0.95. What is judged (`agreement_failures`):

- the load matters: the measured share of streams below QoE 0.95 is resolved above 0 (two
  binomial standard errors) and at least `MIN_MISSED` streams;
- the simulator reproduces how many: its share of streams below 0.95 is the measured one
  within half the measured share (the effect) plus two binomial standard errors;
- and how much: its average shortfall from QoE 1 is the measured one within half the
  measured shortfall (the effect) plus two standard errors of the per-stream paired
  difference.

Measured on 2 cores at a load average of 1.5 (run drift 1.49): 135 streams, measured 0.789
with 47% below 0.95, simulated 0.870 with 32% (bands 0.32 on the share, 0.11 plus two
standard errors on the average). The next run (the profile fitted while the machine was
busy, drift 0.064): measured 0.491 with 84% below, simulated 0.723 with 57%. The simulator
errs on the optimistic side, by more than it does in `make bench` (0.003-0.04).

Mutants of the prediction, judged by the same function, must fail: QoE 1.0 for every stream
(a simulator that sees no load), and the measured QoE moved up or down by the measured
shortfall (a prediction off by the whole effect, either way). The test judges wall-clock
behaviour against a model, so it runs as `serial` (tests/conftest.py: the whole `andes/e2e/`
folder).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos.andes.client.bench_report import RequestRecord
from kairos.andes.experiments.serving import ServingConfig, simulate_records
from kairos.andes.latency import LinearProfile
from kairos.experiments import ExperimentContext, get_experiment

RATE = 3.0  # req/s, ~135 streams; bursts at 2.8x go past this engine's capacity
QOE_MET = 0.95  # a stream at or above this met its user's expectation
MIN_MISSED = 10  # streams below QOE_MET: fewer and a share says little


def agreement_failures(measured: np.ndarray, simulated: np.ndarray) -> list[str]:
    """Where the simulated per-stream QoE disagrees with the measured one (same streams, same
    order); empty when it agrees."""
    n = measured.size
    out = []
    missed_m = float((measured < QOE_MET).mean())
    missed_s = float((simulated < QOE_MET).mean())
    se_m = math.sqrt(missed_m * (1 - missed_m) / n)
    if missed_m * n < MIN_MISSED or missed_m - 2 * se_m <= 0:
        out.append(f"the load does not matter: {missed_m:.3f} of {n} streams below {QOE_MET}")
    band = missed_m / 2 + 2 * se_m
    if abs(missed_s - missed_m) > band:
        out.append(
            f"streams below {QOE_MET}: simulated {missed_s:.3f}, measured {missed_m:.3f}"
            f" (band {band:.3f})"
        )
    short_m, short_s = 1 - float(measured.mean()), 1 - float(simulated.mean())
    diff = simulated - measured
    tolerance = short_m / 2 + 2 * float(diff.std(ddof=1)) / math.sqrt(n)
    if abs(short_s - short_m) > tolerance:
        out.append(
            f"average shortfall: simulated {short_s:.4f}, measured {short_m:.4f}"
            f" (tolerance {tolerance:.4f})"
        )
    return out


def bench_records(path: Path) -> list[RequestRecord]:
    """The requests the bench client wrote, as it saw them."""
    rows = json.loads(path.read_text())["rows"]
    derived = ("ok", "output_tokens")  # properties the row adds, not fields
    return [RequestRecord(**{k: v for k, v in r.items() if k not in derived}) for r in rows]


def per_stream_qoe(
    cfg: ServingConfig, row: dict[str, Any], out: Path
) -> tuple[np.ndarray, np.ndarray]:
    """Measured and simulated (at the run's speed) QoE of every stream that completed."""
    ok = [r for r in bench_records(out / "serving_andes.json") if r.ok]
    profile = LinearProfile.model_validate_json((out / "serving_profile.json").read_text())
    sim = simulate_records(cfg, "andes", profile.scaled(row["run_drift"]), ok)
    by_id = dict(zip((r.request_id for r in sim.requests), sim.qoe(), strict=True))
    measured = np.array([r.qoe for r in ok])
    simulated = np.array([by_id[str(r.index)] for r in ok])
    return measured, simulated


@pytest.mark.slow
def test_the_simulator_predicts_the_real_servers_qoe_stream_by_stream(tmp_path: Path) -> None:
    exp = get_experiment("andes", "serving")
    cfg = exp.config(quick=True).model_copy(
        update={
            "policies": ["andes"],
            "span_s": 40.0,
            "cycle_s": 40.0,
            "calibration_s": 0.0,
            "rate": RATE,
            "port": 8397,
        }
    )
    assert isinstance(cfg, ServingConfig)
    (row,) = exp.run(cfg, ExperimentContext(out_dir=tmp_path, cache=False))
    assert row["requests"] >= 30 and row["failed"] == 0
    measured, simulated = per_stream_qoe(cfg, row, tmp_path)
    # the streams the experiment scored (the simulation is run again here, per stream: it
    # charges the policy's own decision time from the wall clock, so its average moves with
    # the machine's load, by 0.03 between two runs beside a load average of 8)
    assert float(measured.mean()) == pytest.approx(row["measured_avg_qoe"], abs=1e-9)
    print(
        f"\n{measured.size} streams, drift {row['run_drift']:.3f}: measured"
        f" {measured.mean():.4f} ({(measured < QOE_MET).mean():.3f} below {QOE_MET}),"
        f" simulated {simulated.mean():.4f} ({(simulated < QOE_MET).mean():.3f})"
    )
    assert agreement_failures(measured, simulated) == []
    # mutants of the prediction: a simulator that sees no load, and ones off by the whole
    # effect either way (every stream moved by the measured shortfall, not clipped to [0, 1]:
    # clipping at 1 hands back part of the effect, and at a shortfall of 0.26 the clipped
    # optimistic one fell inside both bands)
    assert agreement_failures(measured, np.ones_like(measured))
    shortfall = 1 - float(measured.mean())
    assert agreement_failures(measured, measured + shortfall)
    assert agreement_failures(measured, measured - shortfall)
