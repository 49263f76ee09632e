"""The dissertation's numbers that our experiments print beside theirs (spec 5)."""

from __future__ import annotations

# Table 3.3, Auxo+YoGi vs YoGi: (dataset/model, target accuracy %, speed-up, final gain in points)
TABLE_3_3: tuple[tuple[str, float, float, float], ...] = (
    ("FEMNIST ResNet-18", 82.2, 1.2, 7.3),
    ("OpenImg MobileNet", 56.5, 1.3, 4.8),
    ("OpenImg ShuffleNet", 58.2, 2.2, 5.0),
    ("OpenImg-Easy MobileNet", 65.4, 1.4, 3.4),
    ("OpenImg-Easy ShuffleNet", 64.8, 1.2, 4.4),
    ("Amazon Review LR", 65.3, 1.2, 8.2),
    ("Google Speech ResNet-34", 78.5, 1.5, 5.7),
)
SPEEDUP_RANGE = (1.2, 2.2)
GAIN_RANGE_POINTS = (3.4, 8.2)
VARIANCE_DROP_RANGE = (0.048, 0.538)  # Table 3.4: -4.8% (Speech) to -53.8% (Review)
AFFINITY_SHARE = 0.0002  # "about 0.02% of the total resource use"
# Fig. 3.10 (ShuffleNet-OpenImage): Auxo+X vs X, 1.2-2.2x faster and +3 to +6.8 points
WITH_ALGORITHMS_GAIN_POINTS = (3.0, 6.8)
# Reddit (no separable groups): 1x, no partition
NO_CLUSTER_SPEEDUP = 1.0
# Table 3.4's baselines (no cohorts): worst 10% / best 10% (%) and variance (percent^2) of the
# per-client accuracy. Their single models serve most clients well and some badly.
TABLE_3_4_BASELINE: tuple[tuple[str, int, int, int], ...] = (
    ("OpenImg", 34, 79, 296),
    ("OpenImg-Easy", 33, 84, 273),
    ("Review", 32, 100, 995),
    ("FEMNIST", 60, 93, 185),
    ("Speech", 52, 100, 503),
)
BASELINE_SPREAD = "p10 32-60%, p90 79-100%, variance 185-995 pct^2"
