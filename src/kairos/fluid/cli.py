"""`SYSTEM`: what Fluid adds to `kairos` (its `kairos.systems` entry point); so far only its
group, with the shared `experiment` and `experiments` commands."""

from __future__ import annotations

from kairos.systems import System

SYSTEM = System(
    name="fluid",
    help="Hyperparameter-tuning execution engine that packs and scales trials over GPUs.",
)
