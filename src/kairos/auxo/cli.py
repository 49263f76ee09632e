"""`SYSTEM`: what Auxo adds to `kairos` (its `kairos.systems` entry point): its group, with the
shared `experiment` and `experiments` commands, and the Auxo chapter's experiments."""

from __future__ import annotations

from kairos.systems import System

SYSTEM = System(
    name="auxo",
    help="Federated learning that clusters clients into cohorts.",
    experiments="kairos.auxo.experiments",
)
