"""Exploitation and exploration rewards (spec 3.5) and reward inheritance at a split (3.4).

A client's affinity record maps cohort ids to (R, L, explored). R says how well the client fits
the cohort; L is its sub-cluster inside that cohort, i.e. which child it should join if the cohort
splits.

Exploitation, per cohort-round (only when M > 1): the centre is the mean feature of the *known*
participants (R > 0); D_i is each participant's distance to it; tau = mean(D) + std(D) marks
outliers; the instant reward dR_i = 1 - D_i/tau is at most 1 and negative exactly for outliers;
R <- gamma dR + (1 - gamma) R. `outlier_tau="known"` (an option, not the text) takes mean and std
over the known participants' D only: when clients that do not belong are most of a round, the
round-wide mean(D) is theirs and none of them is an outlier; the known members' spread is not
moved by how many strangers came. It applies to both reward modes (the frame is shared).
Measured in E1 (docs/auxo.md): it also pushes true members out, worse on every population.

Exploration ("binary search" over the tree): every other leaf m' gets a predicted reward
dR/(d + 1), d = hops from the explored cohort up to the LCA, applied with the same EMA
(`explore_update="ema"`) to leaves not yet explored (`explore_targets="unexplored"`). With equal
starting rewards a bad fit then ranks the far subtree first and a good fit keeps the explored
cohort on top. The text's literal "+=" and "all m' != m" are the switches "add" and "all".

`reward_mode="reference"` is the authors' code: cumulative reward with dR = (5 - 5 D/tau) times
the known share, and no tree prediction.

Bounds: with EMA and R <= 1 before, R stays <= 1; a split adds split_bonus to the child matching
the client's label, so R <= 1 + split_bonus * depth in general.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass

import numpy as np

from kairos.auxo.params import AuxoParams
from kairos.auxo.tree import tree_distance


@dataclass
class AffinityEntry:
    """One (client, cohort) affinity: reward R, cluster index L (None = N/A), explored flag."""

    reward: float = 0.0
    label: int | None = None
    explored: bool = False
    votes: list[int] | None = None  # label voting (`label_votes`): one counter per sub-cluster


AffinityRecord = MutableMapping[str, AffinityEntry]


@dataclass(frozen=True)
class RewardFrame:
    """One cohort-round's centre and outlier threshold (kept to score a new client, spec 3.9)."""

    centre: np.ndarray
    tau: float
    known_share: float


def reward_frame(features: np.ndarray, known: np.ndarray, params: AuxoParams) -> RewardFrame | None:
    """Centre of the known participants and tau = mean(D) + std(D); None if too few known.

    D is every participant's distance to the centre; tau's mean and std run over all of them
    (`outlier_tau="round"`, spec 3.5) or over the known ones only ("known"). With two known,
    mean + std of their two distances is the larger one: the farthest known member marks the edge.
    """
    f = np.asarray(features, dtype=np.float64)
    known = np.asarray(known, dtype=bool)
    if int(known.sum()) < params.min_known or f.shape[0] == 0:
        return None
    centre = f[known].mean(axis=0)
    d = np.linalg.norm(f - centre, axis=1)
    ref = d[known] if params.outlier_tau == "known" else d
    tau = float(ref.mean() + ref.std())
    if tau <= 0:
        return None
    return RewardFrame(centre, tau, float(known.mean()))


def instant_reward(feature: np.ndarray, frame: RewardFrame, params: AuxoParams) -> float:
    """dR for one feature row in a cohort-round's frame."""
    d = float(np.linalg.norm(np.asarray(feature, dtype=np.float64) - frame.centre))
    if params.reward_mode == "reference":
        base = params.reference_base
        return (base - base * d / frame.tau) * frame.known_share
    return 1.0 - d / frame.tau


def instant_rewards(
    features: np.ndarray, known: np.ndarray, params: AuxoParams
) -> tuple[np.ndarray, RewardFrame] | None:
    """EXPLOITREWARD's dR for every participant (rows of `features`); None if skipped."""
    frame = reward_frame(features, known, params)
    if frame is None:
        return None
    f = np.asarray(features, dtype=np.float64)
    return np.array([instant_reward(row, frame, params) for row in f]), frame


def blend(old: float, delta: float, params: AuxoParams, *, ema: bool = True) -> float:
    """The reward update: EMA gamma*delta + (1-gamma)*old, or cumulative old + delta."""
    if params.reward_mode == "reference" or not ema:
        return old + delta
    return params.gamma * delta + (1.0 - params.gamma) * old


def apply_feedback(
    record: AffinityRecord,
    cohort: str,
    delta: float | None,
    label: int | None,
    leaves: Iterable[str],
    params: AuxoParams,
) -> None:
    """A participant's reaction to one cohort's feedback (client side, spec 3.10).

    Exploit on `cohort`, predict (explore) on the other leaves, copy the cluster index.
    `delta=None` means the cohort skipped rewards this round (M = 1 or too few known).
    """
    entry = record.setdefault(cohort, AffinityEntry())
    if label is not None:
        entry.label = vote(entry, label, params) if params.label_votes else label
    if delta is None:
        return
    entry.reward = blend(entry.reward, delta, params)
    entry.explored = True
    if params.reward_mode == "reference":
        return
    for other in leaves:
        if other == cohort:
            continue
        target = record.setdefault(other, AffinityEntry())
        if params.explore_targets == "unexplored" and target.explored:
            continue
        predicted = delta / (tree_distance(cohort, other) + 1)
        target.reward = blend(target.reward, predicted, params, ema=params.explore_update == "ema")


def vote(entry: AffinityEntry, label: int, params: AuxoParams) -> int:
    """Label voting (the authors' R code, spec 3.2 option): the new assignment adds 1 to its
    sub-cluster's counter and takes 1 from every other; the label is the highest counter (a
    tie keeps the newest assignment). One noisy round then no longer moves a settled client
    to the other side of a coming split."""
    k = max(params.k, label + 1)
    votes = list(entry.votes or [])
    votes += [0] * (k - len(votes))
    for j in range(k):
        votes[j] += 1 if j == label else -1
    entry.votes = votes
    best = max(votes)
    return label if votes[label] == best else votes.index(best)


def inherit(
    record: AffinityRecord, parent: str, children: Iterable[str], params: AuxoParams
) -> None:
    """Reward inheritance at a split: R_child = R_parent + bonus * 1[L_parent == k] (spec 3.4).

    Unlabelled clients get no bonus; children start unexplored with no label. A record that has
    no entry for the parent, or already has the children, is left alone.
    """
    src = record.get(parent)
    kids = list(children)
    if src is None or any(c in record for c in kids):
        return
    for j, child in enumerate(kids):
        bonus = params.split_bonus if src.label == j else 0.0
        record[child] = AffinityEntry(src.reward + bonus, None, False)


def is_known(record: AffinityRecord, cohort: str) -> bool:
    """A known member of `cohort`: has a record there with R > 0 (spec 2.1 [P])."""
    entry = record.get(cohort)
    return entry is not None and entry.reward > 0
