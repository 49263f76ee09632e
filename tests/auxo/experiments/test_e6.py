"""E6 in quick mode (3 paired seeds, N = 200, 150 rounds): one level of each stress.

What we measured, and assert: clean Auxo beats the single model; under LDP at sigma = 0.6
(epsilon = 8) the noise (norm about sigma * C * sqrt(610) = 15 against updates of norm about
0.2) hides the groups, so Auxo never splits and equals the single model exactly (no harm, no
gain: the paper's "beats the baseline" does not reproduce); with 15% of clients flipping
labels Auxo still beats the single model on the honest clients; with 20% of clients losing
their record once, Auxo keeps most of its gain.
"""

from __future__ import annotations

from pathlib import Path

from kairos.auxo.experiments import e6
from kairos.experiments import ExperimentContext


def test_e6_quick_robustness(tmp_path: Path) -> None:
    cfg = e6.E6Config.model_validate(e6.QUICK)
    ctx = ExperimentContext(tmp_path, jobs=2, progress=False, cache=False)
    rows = {r["condition"]: r for r in e6.e6_rows(cfg, ctx, [0, 1, 2])}
    assert list(rows) == ["clean", "ldp sigma=0.6", "flip 15%", "loss 20% once"]
    clean = rows["clean"]
    assert clean["d_auxo_vs_single"] - clean["d_auxo_vs_single_ci95"] > 10
    assert clean["d_auxo_vs_clean"] == 0.0 and clean["d_single_vs_clean"] == 0.0

    ldp = rows["ldp sigma=0.6"]
    assert ldp["leaves"] == 1.0 and ldp["d_auxo_vs_single"] == 0.0
    assert ldp["d_single_vs_clean"] == 0.0  # only Auxo's view is noised

    flip = rows["flip 15%"]
    assert flip["d_honest_auxo_vs_single"] > 10
    assert flip["d_auxo_vs_single_wins"] == 3

    loss = rows["loss 20% once"]
    assert loss["d_auxo_vs_single"] - loss["d_auxo_vs_single_ci95"] > 10
    assert loss["d_auxo_vs_clean"] > -10
