"""`SYSTEM`: what Salus adds to `kairos` (its `kairos.systems` entry point); so far only its
group, with the shared `experiment` and `experiments` commands."""

from __future__ import annotations

from kairos.systems import System

SYSTEM = System(
    name="salus",
    help="Many DL jobs sharing one GPU: iteration-granularity switching, memory lanes.",
)
