"""Collaborative (federated) learning substrate shared by the FL schedulers (Venn, Auxo).

Devices and their eligibility, availability (check-ins), trace readers, round timing and jobs.
Nothing here knows about any particular scheduler.
"""

from kairos.fl.availability import CheckIns, CheckInSource, DiurnalAvailability, TraceAvailability
from kairos.fl.devices import (
    DevicePopulation,
    DeviceSpecs,
    aibenchmark_specs,
    population_from_specs,
    read_device_specs,
    synthetic_population,
)
from kairos.fl.jobs import FLJob
from kairos.fl.requirements import Requirement, atom_shares, signature_of, signatures
from kairos.fl.timing import ResponseModel, RoundRule, completes
from kairos.fl.traces import (
    AvailabilityTrace,
    CapacityTrace,
    read_availability_trace,
    read_capacity_trace,
)

__all__ = [
    "AvailabilityTrace",
    "CapacityTrace",
    "CheckInSource",
    "CheckIns",
    "DevicePopulation",
    "DeviceSpecs",
    "DiurnalAvailability",
    "FLJob",
    "Requirement",
    "ResponseModel",
    "RoundRule",
    "TraceAvailability",
    "aibenchmark_specs",
    "atom_shares",
    "completes",
    "population_from_specs",
    "read_availability_trace",
    "read_capacity_trace",
    "read_device_specs",
    "signature_of",
    "signatures",
    "synthetic_population",
]
