"""The real stack on the wall clock against the simulator's prediction.

`kairos serve` (the Andes driver on its engine thread, the torch engine as its worker) is
measured for its latency profile, loaded with a bursty `kairos bench` workload over HTTP,
and every stream's QoE is scored from the chunk times the client saw. The simulator (the same
driver with the simulated worker) then runs exactly the requests the client sent with the
fitted profile scaled to the speed this run's engine had (its measured iteration time over the
profile's prediction, from `/metrics`): on a shared machine the profile is measured at one
speed and served at another (once 30x apart here, with another test's worker process at a
raised priority beside it), and the simulator predicts what a speed implies, not the speed.
Its average QoE must be within `TOLERANCE` of the measured one.

This is the serving experiment (`kairos andes experiment serving`) at a small size: one
policy, one 40 s cycle, and the offline profile as fitted (no serving-drift calibration run).
The benchmark runs it in full (`make bench`; measured errors there were 0.003-0.04); runs of
this size erred 0.019-0.044 at the run's speed (0.12-0.29 at the profile's speed while another
test's worker hogged the CPU during the profile fit). The tolerance is wider because the run is
short (a fixed 3 req/s, about 135 streams: one stream moves the average by up to 0.008) and CI
shares two cores with other work. The rate is fixed rather than sized to the measured
capacity: a profile measured while the machine was busy once sized the run to 5 streams. It
was 1.5 req/s until `kairos serve` built its engine on the engine thread (one OpenMP team,
kairos.runtime.torch_threads), which made the served engine 1.3-1.6x faster on 2 CPUs: at 1.5
every stream then met its QoE, measured and simulated (agreement trivially 1.0, CI run of
83d1630). At 3 req/s here: 0.963 measured, 0.980 simulated, 81% of streams at QoE >= 0.95.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kairos.experiments import ExperimentContext, get_experiment

TOLERANCE = 0.12  # absolute, on average QoE in [0, 1]


@pytest.mark.slow
def test_the_simulator_predicts_the_real_servers_average_qoe(tmp_path: Path) -> None:
    exp = get_experiment("andes", "serving")
    cfg = exp.config(quick=True).model_copy(
        update={
            "policies": ["andes"],
            "span_s": 40.0,
            "cycle_s": 40.0,
            "calibration_s": 0.0,
            "rate": 3.0,  # req/s, ~135 streams; bursts at 2.8x go past this engine's capacity
            "port": 8397,
        }
    )
    (row,) = exp.run(cfg, ExperimentContext(out_dir=tmp_path, cache=False))
    assert row["requests"] >= 30 and row["failed"] == 0
    # a load that matters: some streams miss their QoE (else agreement at 1.0 is trivial)
    assert row["measured_qoe95_share"] < 1.0 or row["simulated_qoe95_share"] < 1.0
    measured, simulated = row["measured_avg_qoe"], row["simulated_avg_qoe_at_run_speed"]
    assert abs(measured - simulated) <= TOLERANCE, (measured, simulated, row["run_drift"])
