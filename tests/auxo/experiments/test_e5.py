"""E5(a) in quick mode: the same cohorts (the latent groups) formed at 0%, 15% and 80% of 150
rounds on groups sharing 80% of their labeller, 3 paired seeds.

What we measured, and assert: every partition time beats the single model by far (+10 points
or more); the late split (80%) ends below the intermediate one and its curve is lower; early
(0%) and intermediate (15%) end within about a point of each other (with a convex model the
early split does not lose generality, as the spec warns: the source's "intermediate beats early"
came from ResNet-18 on FEMNIST).
"""

from __future__ import annotations

from pathlib import Path

from kairos.auxo.experiments import e5
from kairos.experiments import ExperimentContext


def test_partition_time_late_is_worse_early_and_intermediate_tie(tmp_path: Path) -> None:
    cfg = e5.E5Config.quick()
    rows = {
        r["case"]: r
        for r in e5.timing_rows(
            cfg, ExperimentContext(tmp_path, jobs=2, progress=False, cache=False), [0, 1, 2]
        )
    }
    assert list(rows) == ["single", "split@0%", "split@15%", "split@80%"]
    single = rows["single"]["final_mean"]
    for case in ("split@0%", "split@15%", "split@80%"):
        assert rows[case]["final_mean"] > single + 0.05
    late = rows["split@80%"]
    assert late["d_final_mean_vs_ref"] < 0 and late["d_curve_mean_vs_ref"] < 0
    assert late["d_curve_mean_vs_ref"] + late["d_curve_mean_vs_ref_ci95"] < 0
    early = rows["split@0%"]
    assert abs(early["d_final_mean_vs_ref"]) < 2.0
    assert rows["split@15%"]["d_final_mean_vs_ref"] == 0.0
