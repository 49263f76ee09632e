"""The starvation-prevention knob ε (§4.4.4, spec §3.8).

Each job's fair-share JCT is `T_i = M * sd_i`: M jobs in the system, and `sd_i`, the JCT it
would have alone, estimated as `R_i * (D_i/λ_i + t0_i)` (rounds times per-round scheduling plus
collection). IRS's sort keys are then rescaled so jobs falling behind their fair share move up:

- `boost_late` (default; the artifact's direction): with t_i the time in the system,
  `d'_i = d_i * (T_i/t_i)^ε` inside a group and `q'_j = q_j * (Σt_i/ΣT_i)^ε` across groups.
- `literal` (the printed formulas): t_i is attained service, `d'_i = d_i * (t_i/T_i)^ε` and
  `q'_j = q_j * (ΣT_i/Σt_i)^ε`.

ε = 0 is plain Venn; as ε grows the fairness factor dominates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from kairos.venn.matching import tail
from kairos.venn.view import ManagerView, RequestView

FairnessMode = Literal["boost_late", "literal"]
MIN_TIME_S = 60.0


def solo_jct(req: RequestView, eligible_rate: float, tail_q: float = 0.95) -> float:
    """sd_i: rounds x (scheduling time alone + tail response time, or the deadline)."""
    rounds = req.rounds if req.rounds is not None else req.round_idx + 1
    t0 = tail(req.profile.response_s, tail_q) if len(req.profile) else float("nan")
    if math.isnan(t0):  # no profile yet: the deadline bounds a round's collection
        t0 = req.deadline_s
    sched = req.demand / eligible_rate if eligible_rate > 0 else req.deadline_s
    return rounds * (sched + t0)


def fairness_factors(
    view: ManagerView,
    groups: Mapping[int, Sequence[RequestView]],
    epsilon: float,
    mode: FairnessMode = "boost_late",
) -> tuple[dict[int, float], dict[int, float]]:
    """(key multiplier per request id, queue-length multiplier per group)."""
    if epsilon == 0:
        return {}, {}
    m = max(view.jobs_in_system, 1)
    key: dict[int, float] = {}
    group: dict[int, float] = {}
    for g, reqs in groups.items():
        lam = view.eligible_rate(g)
        sum_t = sum_fair = 0.0
        for r in reqs:
            fair = m * solo_jct(r, lam)
            if mode == "boost_late":
                t = max(view.now - r.arrival, MIN_TIME_S)
                key[r.request_id] = (fair / t) ** epsilon
            else:
                t = max(r.attained_s, MIN_TIME_S)
                key[r.request_id] = (t / fair) ** epsilon
            sum_t += t
            sum_fair += fair
        ratio = sum_t / sum_fair if mode == "boost_late" else sum_fair / sum_t
        group[g] = ratio**epsilon
    return key, group
