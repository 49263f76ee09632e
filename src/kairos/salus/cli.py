"""`SYSTEM`: what Salus adds to `kairos` (its `kairos.systems` entry point): its group, with
the shared `experiment` and `experiments` commands, and the Salus chapter's experiments."""

from __future__ import annotations

from kairos.salus.runtime.cli import register
from kairos.systems import System

SYSTEM = System(
    name="salus",
    help="Many DL jobs sharing one GPU: iteration-granularity switching, memory lanes.",
    experiments="kairos.salus.experiments",
    register=(register,),
)
