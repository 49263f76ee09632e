"""What the source says, to print beside our numbers (spec 5 and 6.5). Exact bar heights of
Figs. 3.7-3.13 are not in the text; these are its statements."""

from __future__ import annotations

SPEEDUP_OVERALL = "around 10%-70% faster (sec. 3.6 highlights)"
SPEEDUP_BY_ALGORITHM = {
    "syncbohb": "about 2x (100%) faster (sec. 3.1); sync 30-100% (Figs 3.7/3.8)",
    "hyperband": "sync stage-based gain most: 30-100% (Figs 3.7/3.8)",
    "asha": "about 30% (sec. 3.1); async 10-30% (Figs 3.7/3.8)",
    "bohb": "about 30% (sec. 3.1); async 10-30% (Figs 3.7/3.8)",
    "pbt": "small gain, 'limited' (Fig 3.7); no number given",
}
FIG_3_10 = (
    "Fig 3.10: ASHA, FLUID at K = 8 on 4 GPUs ~ baseline on 8, better on 16 (Ray Tune's "
    "concurrency = GPU count)"
)
TABLE_3_2 = {  # SHA without Fluid: workers -> (utilisation %, runtime)
    2: (81.2, 2356),
    4: (63.0, 1432),
    8: (45.8, 1073),
    16: (47.0, 475),
    32: (25.2, 432),
}
# The same statements as speed-up ranges (time-to-target ratio), for plots: "30-100%" faster
# is 1.3-2.0x, "10-30%" is 1.1-1.3x; PBT has no number.
SPEEDUP_RANGE = {
    "syncbohb": (1.3, 2.0),
    "hyperband": (1.3, 2.0),
    "asha": (1.1, 1.3),
    "bohb": (1.1, 1.3),
}
