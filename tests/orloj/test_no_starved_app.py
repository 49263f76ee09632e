"""Relaxed SLOs under Poisson arrivals starve no application (quick).

The heavy, 5-seed version with paired CIs against every baseline is
`python -m benchmarks --only bench_orloj`; this checks the mechanism on one seed: with the
paper's b = 1e-4 the longest application of three-modal is the one left behind (at Clockwork's
sizes S with the mean drop estimate, the setting the starvation was found in), b = 1e-3 lifts
it there, and the default (b = 1e-3, sizes 1-16, quantile:0.9) finishes every application at
least 0.95 at 5x P99."""

from __future__ import annotations

from typing import Any

from kairos.orloj.config import OrlojConfig
from kairos.orloj.experiments.point import SimPoint, run_point

S = (1, 2, 4, 8, 16)


def _by_app(sizes: tuple[int, ...] | None, **options: Any) -> dict[str, float]:
    point = SimPoint(
        batch_sizes=sizes,
        workload="three-modal",
        slo_mult=5.0,
        system="orloj",
        options=options,
        seed=3,
        n_requests=2500,
        arrival="poisson",
    )
    return dict(run_point(point)["finish_rate_by_app"])


def test_the_longest_app_is_not_starved_at_relaxed_slos_under_poisson() -> None:
    assert OrlojConfig().b == 1e-3 and OrlojConfig().cost_mean == "app"
    paper = _by_app(S, b=1e-4, drop_estimator="mean")
    fixed = _by_app(S, drop_estimator="mean")
    served = _by_app(None)
    print(f"\nS, mean, b=1e-4: {paper}\nS, mean, b=1e-3: {fixed}\ndefault: {served}")
    # the paper's b: the long mode (mode2) trails the short ones clearly
    assert min(paper, key=paper.__getitem__) == "mode2"
    assert paper["mode2"] <= min(paper["mode0"], paper["mode1"]) - 0.04
    # b = 1e-3: the long one no longer left behind, every application at least 0.95
    assert min(fixed.values()) >= 0.95, fixed
    assert fixed["mode2"] >= paper["mode2"] + 0.03
    assert min(served.values()) >= 0.95, served  # and so under the default
