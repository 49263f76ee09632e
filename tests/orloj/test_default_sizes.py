"""Each system runs the batch sizes it really supports unless S is given.

The default Orloj batches any size 1-16 with the quantile:0.9 drop estimate; Clockwork only
its compiled S = {1, 2, 4, 8, 16}; an explicit S (`SimPoint.batch_sizes`, `--set
batch_sizes=[...]`) is every system's. Checked on what the policies emit over a short run,
not only on their attributes: a policy handed sizes it ignores would pass the latter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.config import OrlojConfig
from kairos.orloj.experiments.point import SimPoint, point_policy, point_recording
from kairos.orloj.runtime.calibrate import complete_table
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.systems import make_system
from kairos.orloj.workloads import get_workload

S = (1, 2, 4, 8, 16)
EVERY = tuple(range(1, 17))


def _sizes_run(system: str, sizes: tuple[int, ...] | None = None, **options: Any) -> set[int]:
    """The batch sizes `system` ran on three-modal at 3x P99 (bursty, 1,500 requests)."""
    p = SimPoint(
        workload="three-modal",
        system=system,
        slo_mult=3.0,
        n_requests=1500,
        batch_sizes=sizes,
        options=options,
    )
    w = get_workload(p.workload)
    rec = point_recording(p)
    slo = p.slo_mult * w.p99_ms
    policy = point_policy(p, slo, float(rec.meta["rate_per_ms"]))
    offline = w.offline_profile(1000, np.random.default_rng(0))
    res = simulate(policy, rec.requests(slo), SimConfig(), offline)
    return {b.size for b in res.batches if not b.rejected}


def test_default_orloj_runs_every_size_with_the_quantile_estimate_clockwork_only_s() -> None:
    cfg = OrlojConfig()
    assert cfg.batch_sizes == EVERY and cfg.drop_estimator == "quantile:0.9"
    orloj = _sizes_run("orloj")
    clockwork = _sizes_run("clockwork")
    print(f"\norloj ran {sorted(orloj)}; clockwork ran {sorted(clockwork)}")
    assert orloj <= set(EVERY) and orloj - set(S)  # sizes Clockwork has no model for
    assert clockwork <= set(S)
    policy = make_system("orloj", model=BatchLatencyModel(), slo_ms=100.0)
    assert policy.config.drop_estimator == "quantile:0.9"  # type: ignore[attr-defined]


def test_an_explicit_s_applies_to_every_system() -> None:
    given = (1, 2, 4)
    for system in ("orloj", "clockwork", "edf"):
        assert _sizes_run(system, given) <= set(given), system
    p = SimPoint(system="clipper", batch_sizes=given)
    assert point_policy(p, 100.0, 0.1).cap == 4  # type: ignore[attr-defined]
    nexus = point_policy(SimPoint(system="nexus", batch_sizes=given), 100.0, 0.1)
    assert tuple(nexus.sizes) == given  # type: ignore[attr-defined]
    # an Orloj option naming other sizes than the explicit S is an error, not a silent pick
    twice = SimPoint(system="orloj", batch_sizes=given, options={"batch_sizes": S})
    with pytest.raises(ValueError, match="given twice"):
        point_policy(twice, 100.0, 0.1)
    # the option alone is that Orloj's S (the benchmarks' old-default label uses it)
    alone = point_policy(SimPoint(system="orloj", options={"batch_sizes": S}), 100.0, 0.1)
    assert alone.sizes == list(S)  # type: ignore[attr-defined]


def test_a_calibrated_table_limits_the_default_to_the_sizes_it_has_rows_for() -> None:
    # the real server times S and interpolates every k up to 16 (`complete_table`): the
    # default Orloj then gets every size; a table with fewer rows gives it only those
    measured = BatchLatencyModel(table={k: (1.0, 0.8 + 0.1 * k) for k in S})
    served = complete_table(measured, S)
    assert served.table is not None and sorted(served.table) == list(EVERY)
    assert served.table[3] == pytest.approx((1.0, 1.1))  # halfway between 2 and 4
    assert make_system("orloj", model=served, slo_ms=100.0).sizes == list(EVERY)  # type: ignore[attr-defined]
    small = BatchLatencyModel(table={1: (1.0, 1.0), 2: (1.0, 1.1)})
    assert make_system("orloj", model=small, slo_ms=100.0).sizes == [1, 2]  # type: ignore[attr-defined]
    assert make_system("clockwork", model=measured, slo_ms=100.0).sizes == S  # type: ignore[attr-defined]
