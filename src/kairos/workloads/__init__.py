"""Workloads: arrival processes, request-length distributions, and real trace files.

Everything ends up as a `Trace` (arrival times with prompt and output lengths), the one
representation every simulator and load generator consumes.
"""

from kairos.workloads.arrivals import (
    ArrivalProcess,
    CyclicBurst,
    Gamma,
    Poisson,
    TraceReplay,
    arrival_process,
)
from kairos.workloads.lengths import (
    DATASETS,
    EmpiricalLengths,
    LengthDistribution,
    LognormalLengths,
    dataset_lengths,
    synthesize,
)
from kairos.workloads.trace import (
    Trace,
    TraceFormatError,
    read_azure_csv,
    read_burstgpt_csv,
    read_trace,
)

__all__ = [
    "DATASETS",
    "ArrivalProcess",
    "CyclicBurst",
    "EmpiricalLengths",
    "Gamma",
    "LengthDistribution",
    "LognormalLengths",
    "Poisson",
    "Trace",
    "TraceFormatError",
    "TraceReplay",
    "arrival_process",
    "dataset_lengths",
    "read_azure_csv",
    "read_burstgpt_csv",
    "read_trace",
    "synthesize",
]
