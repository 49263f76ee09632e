"""What an Andes scheduler decides each iteration, as plain records keyed by request id.

The shape is vLLM v1's `SchedulerOutput`: how many tokens of which request to compute (and how
many of its tokens are already cached, so where they start), which requests lost their KV
cache (recompute preemptions), which KV blocks move to or from the host swap pool and in what
order, and which requests stopped because their context outgrew the cache. The torch engine's
runner executes this record (`Iteration`) and the driver logs the same object, so a decision
log holds exactly what the mechanism was told. Records hold ids and integers only; the live
`Request`s stay in the scheduler (docs/architecture.md, "one driver per system").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kairos.decisions import Codec

SYSTEM = "andes"


@dataclass(frozen=True, slots=True)
class Step:
    """Compute `tokens` context tokens of a request whose first `cached` are in the cache; a
    step that completes the context `samples` one new token."""

    request_id: str
    tokens: int
    cached: int
    samples: bool


@dataclass(frozen=True, slots=True)
class Swap:
    """A request's KV blocks copied out to the host pool or back in, as (from, to) block
    pairs. Copies run in the order decided: a block one frees can be the next one's target."""

    request_id: str
    direction: Literal["out", "in"]
    blocks: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Iteration:
    """One iteration's decision: its steps, the recompute preemptions, the swaps in order,
    and the requests stopped because their context no longer fits the whole cache."""

    steps: tuple[Step, ...] = ()
    preempted: tuple[str, ...] = ()
    swaps: tuple[Swap, ...] = ()
    finished: tuple[str, ...] = ()

    @property
    def swapped_out(self) -> tuple[str, ...]:
        return tuple(s.request_id for s in self.swaps if s.direction == "out")

    @property
    def swapped_in(self) -> tuple[str, ...]:
        return tuple(s.request_id for s in self.swaps if s.direction == "in")


CODEC = Codec([Iteration])
