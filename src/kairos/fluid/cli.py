"""`SYSTEM`: what Fluid adds to `kairos` (its `kairos.systems` entry point): its group with
the shared `experiment` and `experiments` commands, and the Fluid chapter's experiments."""

from __future__ import annotations

from kairos.systems import System

SYSTEM = System(
    name="fluid",
    help="Hyperparameter-tuning execution engine that packs and scales trials over GPUs.",
    experiments="kairos.fluid.experiments",
)
