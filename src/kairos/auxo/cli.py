"""`SYSTEM`: what Auxo adds to `kairos` (its `kairos.systems` entry point); so far only its
group, with the shared `experiment` and `experiments` commands."""

from __future__ import annotations

from kairos.systems import System

SYSTEM = System(
    name="auxo",
    help="Federated learning that clusters clients into cohorts.",
)
