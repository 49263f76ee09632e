"""The Orloj paper's figures and tables as named experiments (`kairos orloj experiment NAME`).

Importing this package registers them: modality, bimodal, realworld, static (Appendix C's
finish-rate tables), b_sweep, scale_down, ablation, load, drift (an unprofiled slowdown), and
hull (Fig 4.12).
"""

from kairos.orloj.experiments import drift, finish_rate, hull_bench, sensitivity
from kairos.orloj.experiments.point import SimPoint, point_recording, run_point

__all__ = [
    "SimPoint",
    "drift",
    "finish_rate",
    "hull_bench",
    "point_recording",
    "run_point",
    "sensitivity",
]
