"""`SYSTEM`: what Fluid adds to `kairos` (its `kairos.systems` entry point): its group with
`run` (real trials on this machine) beside the shared `experiment` and `experiments` commands,
and the Fluid chapter's experiments."""

from __future__ import annotations

from kairos.fluid.runtime.cli import register
from kairos.systems import System

SYSTEM = System(
    name="fluid",
    help="Hyperparameter tuning that packs and scales trials over GPUs.",
    experiments="kairos.fluid.experiments",
    register=(register,),
)
