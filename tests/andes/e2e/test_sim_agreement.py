"""The real stack on the wall clock against the simulator's prediction (issue 12, must-show 1).

`kairos serve` (the Andes driver on its engine thread, the torch engine as its worker) is
measured for its latency profile, loaded with a bursty `kairos bench` workload over HTTP,
and every stream's QoE is scored from the chunk times the client saw. The simulator (the same
driver with the simulated worker) then runs exactly the requests the client sent with the
fitted profile. Its average QoE must be within `TOLERANCE` of the measured one.

This is the serving experiment (`kairos andes experiment serving`) at a small size: one
policy, one 40 s cycle, and the offline profile as fitted (no serving-drift calibration run).
The benchmark runs it in full (`make bench`; measured errors there were 0.003-0.04); four
local runs of this size erred 0.023-0.044. The tolerance is wider because the run is short
(15-70 streams, sized to the capacity measured at the start: one stream can move the average
by 0.06) and CI shares two cores with other work, which changes the engine's speed after its
profile was measured.
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
            "load_factor": 0.8,
            "port": 8397,
        }
    )
    (row,) = exp.run(cfg, ExperimentContext(out_dir=tmp_path, cache=False))
    assert row["requests"] >= 10 and row["failed"] == 0  # sized to the measured capacity
    # a load that matters: some streams miss their QoE (else agreement at 1.0 is trivial)
    assert row["measured_qoe95_share"] < 1.0 or row["simulated_qoe95_share"] < 1.0
    measured, simulated = row["measured_avg_qoe"], row["simulated_avg_qoe"]
    assert abs(measured - simulated) <= TOLERANCE, (measured, simulated, row["run_drift"])
