"""Labels for the clients a split finds without one (`unlabelled_at_split="probe"`, not the text).

Why: at a split every client inherits its parent's reward, plus `split_bonus` on the child named
by its cluster index L at the parent (spec 3.4). A client that never took part in a clustered
round of the parent has no L, so its children tie and it picks one uniformly (spec 3.6's tie
rule; spec 3.7's MATCH "uniform child" is the same rule for a client that has not heard of the
split). Under E1's availability trace that is most of a majority group: at the root's split
most of its clients carry no root label, many of those land on the minorities' side and, being
most of that child's rounds, stay (docs/auxo.md, E1, gives the measured shares).

What the split itself knows is the parent's last clustering round: the weights its participants
trained from, that round's feature frame (mean, norm) and the K centroids that labelled them
(`SplitFrame`, kept by the policy). A client that trains one local round from those weights has
an update in exactly that frame; its nearest centroid is the label that round would have given
it had it taken part. With that label it inherits as a labelled client does (`give_label`).

When: only where the text's uniform tie-break would decide. At check-in, if the client's
highest rewards tie over leaves under two or more children of a split where it has no label,
that split (the lowest one above the tied leaves) is probed; a client new to a tree of four
leaves probes the root, then the child it joins (one probe per level). A client with a label at
that split keeps the text's rule. `place_at_split` is pure and runs on the client's own record
(the server's table in centralized mode, the device in distributed mode); the probe is the
callback `ask`, so nothing here sees client data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from kairos.auxo.features import FeatureFrame, nearest
from kairos.auxo.params import FeatureNorm
from kairos.auxo.rewards import AffinityEntry, AffinityRecord
from kairos.auxo.tree import lca

_TIE = 1e-12  # the same tolerance as selection.greedy's ties


@dataclass(frozen=True)
class SplitFrame:
    """A cohort's last clustering round: what a probe of the cohort's split is compared with."""

    round: int
    weights: np.ndarray  # the model that round's participants trained from
    mean: np.ndarray  # the round mean of the compressed updates
    norm: FeatureNorm
    centroids: np.ndarray  # (K, d): the centres that labelled that round's participants

    def label(self, compressed_update: np.ndarray) -> int:
        """The cluster index that round would have given this (compressed) update."""
        frame = FeatureFrame(np.zeros((0, self.mean.size)), self.mean, self.norm)
        return int(nearest(frame.place(compressed_update)[None, :], self.centroids)[0])


@dataclass
class SplitFrames:
    """The policy's per-cohort (never per-client) state for probes: the weights each leaf's
    next round starts from, and each cohort's last clustering frame (kept once it splits)."""

    frames: dict[str, SplitFrame] = field(default_factory=dict)
    start: dict[str, np.ndarray] = field(default_factory=dict)

    def note_start(self, cohort: str, weights: np.ndarray | None) -> None:
        if weights is not None:
            self.start[cohort] = weights.copy()

    def keep(
        self,
        cohort: str,
        round: int,
        frame: FeatureFrame,
        centroids: np.ndarray | None,
        weights_after: np.ndarray | None,
    ) -> None:
        """A clustering round of `cohort` ran (`centroids` None: it labelled nobody); the
        driver stored its result (`weights_after`), which the next round starts from."""
        start = self.start.get(cohort)
        if centroids is not None and start is not None:
            self.frames[cohort] = SplitFrame(
                round, start, frame.mean.copy(), frame.norm, np.array(centroids, copy=True)
            )
        self.note_start(cohort, weights_after)

    def split(self, parent: str, children: dict[str, np.ndarray | None]) -> None:
        """Children start from the parent's weights; the parent's frame stays for probes."""
        self.start.pop(parent, None)
        for child, weights in children.items():
            self.note_start(child, weights)


def tied_leaves(record: AffinityRecord, leaves: Sequence[str]) -> list[str]:
    """The leaves of highest reward (missing entries count 0), as greedy selection sees them."""
    values = np.array([record[c].reward if c in record else 0.0 for c in leaves])
    return [leaves[int(i)] for i in np.flatnonzero(values >= values.max() - _TIE)]


def below(leaf: str, node: str) -> bool:
    """`leaf` lies strictly under `node` in the tree (dotted ids)."""
    return leaf.startswith(node + ".")


def give_label(
    record: AffinityRecord, split: str, label: int, leaves: Sequence[str], bonus: float
) -> None:
    """Spec 3.4's inheritance with a late label: L at `split` is `label`, and every leaf under
    child `label` gets `bonus` (leaves under `split` the record lacks start from R at `split`,
    as inheritance would have started them)."""
    entry = record.setdefault(split, AffinityEntry())
    entry.label = int(label)
    chosen = f"{split}.{int(label)}"
    for leaf in leaves:
        if not below(leaf, split):
            continue
        target = record.setdefault(leaf, AffinityEntry(entry.reward))
        if leaf == chosen or below(leaf, chosen):
            target.reward += bonus


def place_at_split(
    record: AffinityRecord,
    leaves: Sequence[str],
    ask: Callable[[str], int | None],
    bonus: float,
) -> list[tuple[str, int]]:
    """Resolve the client's tie by probes: the (split, label) pairs it learnt, top down.

    `ask(split)` is the probe (the client trains one local round on the split's frame weights,
    the coordinator returns the nearest centroid), None when it cannot be made or failed.
    """
    leaves = list(leaves)
    placed: list[tuple[str, int]] = []
    while len(leaves) > 1:
        tied = tied_leaves(record, leaves)
        if len(tied) < 2:
            break
        split = reduce(lca, tied)
        entry = record.get(split)
        if entry is not None and entry.label is not None:
            break  # labelled there: the text's tie rule
        label = ask(split)
        if label is None:
            break
        give_label(record, split, label, leaves, bonus)
        placed.append((split, int(label)))
    return placed
