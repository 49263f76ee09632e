"""The real serving stack on this machine: `kairos andes experiment serving` in full mode.

`kairos serve` (fcfs, then andes) under the same bursty `kairos bench` workload sized to the
engine's measured capacity, and the simulator fed the fitted profile on the same requests.
Targets, reported as 0/1 columns (never asserted: it is a measurement on a shared machine):
andes' measured average QoE above fcfs', and the simulator within 0.05 of each measurement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairos.experiments import ExperimentContext, get_experiment


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    exp = get_experiment("andes", "serving")  # its registered quick settings
    rows: list[dict[str, Any]] = exp.run(
        exp.config(quick=quick), ExperimentContext(out_dir=out_dir / "serving", cache=False)
    )
    by = {r["policy"]: r for r in rows}
    andes, fcfs = by["andes"]["measured_avg_qoe"], by["fcfs"]["measured_avg_qoe"]
    return [
        {
            "policy": r["policy"],
            "measured_avg_qoe": r["measured_avg_qoe"],
            "simulated_avg_qoe": r["simulated_avg_qoe"],
            "abs_error": r["abs_error"],
            "sim_within_0.05": int(r["abs_error"] <= 0.05),
            "andes_above_fcfs": int(andes > fcfs),
        }
        for r in rows
    ]
