"""Why some clients end in a wrong cohort: measurements over a finished run (evaluation only).

The variance of per-client accuracy rises under Auxo in E1 because a few clients settle in a
wrong cohort although the cohort models are right (docs/auxo.md, E1). These numbers locate
the cause in the source's own reward rule rather than in the clients' data:

* Outlier rate of rounds with no outsider ("pure" rounds: every participant's lowest-loss
  leaf is the cohort it trained in). The threshold tau = mean(D) + std(D) is relative to the
  round, so it marks about one participant in six as an outlier (dR < 0) even when all of
  them belong. In rounds with outsiders the outsiders take most of those places.
* Participations after the first split: a client that drew a negative reward in its own
  cohort leaves it, and only further participations (with epsilon nearly zero by then) bring
  it back, so misplacement concentrates in clients that took part rarely.
* Misplaced clients whose membership leaf is one they never trained in: membership is the
  highest reward, and for them that is an inherited or predicted value.

The lowest-loss ("oracle") leaf of spec 3.9 stands for the right cohort; it reads client data,
so this module is for evaluation only, like `evaluation.oracle_membership`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kairos.auxo.policy import RoundReport
from kairos.auxo.rewards import AffinityEntry


@dataclass(frozen=True)
class PlacementDiagnostics:
    """Reward outliers by round kind, and what sets misplaced clients apart."""

    pure_outlier_share: float  # dR < 0 among participants of rounds without outsiders
    member_outlier_share: float  # the same for members, in rounds with outsiders
    outsider_outlier_share: float  # outsiders (oracle leaf elsewhere) with dR < 0
    visits_misplaced: float  # median rewarded participations after the first split
    visits_placed: float
    misplaced_rare: float  # misplaced share among clients with < `rare` such participations
    misplaced_frequent: float  # ... and among the others
    never_trained_in_member_leaf: float  # share of misplaced whose leaf they never trained in

    def columns(self) -> dict[str, float]:
        return {k: round(float(v), 4) for k, v in self.__dict__.items()}


def _share(flags: Sequence[bool]) -> float:
    return float(np.mean(flags)) if len(flags) else float("nan")


def placement_diagnostics(
    reports: Sequence[RoundReport],
    records: dict[int, dict[str, AffinityEntry]],
    leaves: Sequence[str],
    oracle: np.ndarray,
    membership: np.ndarray,
    rare: int = 10,
) -> PlacementDiagnostics:
    """Measure a finished run: `oracle` and `membership` are leaf indices per client."""
    pos = {c: j for j, c in enumerate(leaves)}
    n = len(oracle)
    visits = np.zeros(n, dtype=np.int64)
    pure: list[bool] = []
    member: list[bool] = []
    outsider: list[bool] = []
    for rep in reports:
        if rep.deltas is None:
            continue  # one cohort, or too few known: no reward this round
        ids = np.asarray(rep.client_ids, dtype=np.int64)
        visits[ids] += 1
        if rep.cohort not in pos:
            continue  # a parent that has split since: its "right" members are undefined
        negative = [d < 0 for d in rep.deltas]
        belongs = [int(oracle[c]) == pos[rep.cohort] for c in ids]
        if all(belongs):
            pure.extend(negative)
            continue
        for neg, b in zip(negative, belongs, strict=True):
            (member if b else outsider).append(neg)
    wrong = np.asarray(oracle) != np.asarray(membership)
    never = []
    for c in np.flatnonzero(wrong).tolist():
        entry = records.get(c, {}).get(leaves[int(membership[c])])
        never.append(entry is None or not entry.explored)
    few = visits < rare
    return PlacementDiagnostics(
        pure_outlier_share=_share(pure),
        member_outlier_share=_share(member),
        outsider_outlier_share=_share(outsider),
        visits_misplaced=float(np.median(visits[wrong])) if wrong.any() else float("nan"),
        visits_placed=float(np.median(visits[~wrong])) if (~wrong).any() else float("nan"),
        misplaced_rare=_share(wrong[few].tolist()),
        misplaced_frequent=_share(wrong[~few].tolist()),
        never_trained_in_member_leaf=_share(never),
    )
