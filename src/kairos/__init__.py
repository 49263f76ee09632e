"""kairos: application-aware schedulers for machine-learning systems.

Six systems share one small kernel (`kairos.sim`), workload generators (`kairos.workloads`),
result reporting (`kairos.report`) and a sweep runner (`kairos.experiments`).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kairos")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
