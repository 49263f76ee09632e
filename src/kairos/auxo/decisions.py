"""Auxo's decisions as plain records (`kairos.decisions`): round reports and cohort changes.

Auxo decides once per cohort-round: it clusters the participants' updates, gives each a new
cluster index L and a reward dR, and rules whether the cohort splits. `CohortRound` holds that
decision together with everything it was computed from (the participants' claimed L and R for
the cohort, and the compressed update rows that clustering reads), so a recorded round can be
fed again through the policy that decided it (`kairos.auxo.replay`). A split or a merge
that follows is a cohort change (`Split`, `Merge`); `LateRewards` are the rewards of the option
`straggler_feedback`. Time is the driver's clock: the Flower
server round in a Flower run, simulated seconds in `CohortTraining`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kairos.auxo.criteria import Decision
from kairos.auxo.rewards import AffinityEntry
from kairos.decisions import Codec, DecisionLog


@dataclass(frozen=True, slots=True)
class Claim:
    """What a participant claimed about the cohort it trained with: its cluster index L there
    (None: it has none) and its reward R (None: it has no entry for the cohort)."""

    client: int
    label: int | None
    reward: float | None


@dataclass(frozen=True, slots=True)
class CohortRound:
    """One cohort-round: its inputs (claims and compressed update rows, one per participant,
    in the same order) and what was decided from them."""

    cohort: str
    round: int  # the cohort's local round counter
    claims: tuple[Claim, ...]
    rows: tuple[tuple[float, ...], ...]
    labels: tuple[int, ...]  # the new L sent to each participant, -1: none
    rewards: tuple[float, ...] | None  # dR sent to each participant; None: no rewards
    status: str  # the clustering step's outcome (`kairos.auxo.clustering.Status`)
    checks: dict[str, bool] | None  # the partition criteria's verdicts; None: not evaluated
    split: bool  # the criteria ruled for a split (the leaf cap may still refuse it)

    @property
    def clients(self) -> tuple[int, ...]:
        return tuple(c.client for c in self.claims)


@dataclass(frozen=True, slots=True)
class Split:
    """A leaf replaced by its children. `members` maps each child to the clients whose record
    held the parent's cluster index for it at that moment: those inherit the split bonus there
    (in a Flower run, this round's participants; the server keeps no other record)."""

    parent: str
    children: tuple[str, ...]
    round: int
    members: dict[str, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class LateRewards:
    """Option `straggler_feedback`: rewards for updates that arrived after the round's P-th,
    scored in that round's frame (`rows` as in `CohortRound`, one per client)."""

    cohort: str
    clients: tuple[int, ...]
    rows: tuple[tuple[float, ...], ...]
    rewards: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Merge:
    """A leaf dropped by the optional merge; MATCH sends its clients to its siblings."""

    cohort: str


CODEC = Codec([CohortRound, Split, Merge, LateRewards])


class Reported(Protocol):
    """What `cohort_round` reads of a round's report (`kairos.auxo.policy.RoundReport`)."""

    @property
    def cohort(self) -> str: ...
    @property
    def labels(self) -> tuple[int, ...]: ...
    @property
    def deltas(self) -> tuple[float, ...] | None: ...
    @property
    def status(self) -> str: ...
    @property
    def decision(self) -> Decision | None: ...


def cohort_round(
    report: Reported, round_local: int, claims: Sequence[Claim], rows: np.ndarray
) -> CohortRound:
    """The record of one cohort-round from its report and what it was computed from."""
    decision = report.decision
    return CohortRound(
        report.cohort,
        int(round_local),
        tuple(claims),
        rows_of(rows),
        report.labels,
        report.deltas,
        report.status,
        None if decision is None else {k: bool(v) for k, v in decision.checks.items()},
        decision is not None and bool(decision.split),
    )


def split_members(
    records: Mapping[int, Mapping[str, AffinityEntry]], parent: str, children: Sequence[str]
) -> dict[str, tuple[int, ...]]:
    """Per child, the clients whose record holds the cluster index for it in `parent`
    (inheritance gives them the split bonus there, `rewards.inherit`)."""
    out: dict[str, list[int]] = {child: [] for child in children}
    for client in sorted(records):
        entry = records[client].get(parent)
        if entry is not None and entry.label is not None and entry.label < len(children):
            out[children[entry.label]].append(int(client))
    return {child: tuple(ids) for child, ids in out.items()}


def rows_of(comp: np.ndarray) -> tuple[tuple[float, ...], ...]:
    """Compressed update rows as plain floats (exact: JSON writes a float's shortest repr)."""
    return tuple(tuple(row) for row in np.asarray(comp, dtype=np.float64).tolist())


def open_log(path: str | Path, meta: Mapping[str, Any]) -> DecisionLog:
    """A decision log of Auxo's records at `path`; a `ValueError` naming the path when it
    cannot be written (`DecisionLogError`, a ValueError)."""
    return DecisionLog(path, CODEC, "auxo", dict(meta))
