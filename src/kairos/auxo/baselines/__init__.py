"""Clustered-FL baselines for Auxo (spec 4) on the same training substrate.

IFCA (`ifca`), CL+HC (`clhc`), FlexCFL-lite (`flexcfl`) and CCL (`ccl`): each drives its
cluster models as `kairos.fl.learning.TrainingState`s through the one `RoundRunner`, so local
training, aggregation and the clock are plain FL's, and each returns a `BaselineResult`
(per-client accuracy on the assigned model, the `History` of evaluations, the assignment).
"""

from kairos.auxo.baselines.ccl import CCLConfig, run_ccl
from kairos.auxo.baselines.clhc import CLHCConfig, run_clhc
from kairos.auxo.baselines.common import BaselineResult, ClusterSet, proportional_budgets
from kairos.auxo.baselines.flexcfl import FlexCFLConfig, run_flexcfl
from kairos.auxo.baselines.ifca import IFCAConfig, run_ifca

__all__ = [
    "BaselineResult",
    "CCLConfig",
    "CLHCConfig",
    "ClusterSet",
    "FlexCFLConfig",
    "IFCAConfig",
    "proportional_budgets",
    "run_ccl",
    "run_clhc",
    "run_flexcfl",
    "run_ifca",
]
