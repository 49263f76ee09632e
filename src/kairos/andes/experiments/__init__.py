"""The Andes paper's figures and tables as named experiments (`kairos andes experiment NAME`).

Importing this package registers them: e1-e11, `capacity` (Tables 2.5/A.3/A.4) and
`ablation` (spec section 10's guards).
"""

from kairos.andes.experiments import bursts, others, serving, trace_replay
from kairos.andes.experiments.workload import SimPoint, build_trace, run_point

__all__ = [
    "SimPoint",
    "build_trace",
    "bursts",
    "others",
    "run_point",
    "serving",
    "trace_replay",
]
