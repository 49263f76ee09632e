"""The slack cap (an anti-thrash guard of `AndesConfig`, `slack_cap`): how many preemptions
one decision may make.

Each preemption frees memory for an admission, and each admission stalls every running
stream for its start delay (a prefill, or a swap-in); n preemptions stall the rest for about
n start delays. The cap allows only as many as the least-slack running users can absorb.
"""

from __future__ import annotations

import numpy as np

from kairos.andes.policies.snapshot import Snapshot


def cap_by_slack(snap: Snapshot, now: float, preempt: list[int], admit: list[int]) -> list[int]:
    """`preempt` cut to at most p10(running users' buffered slack) / mean start delay of
    `admit` (at least one)."""
    st = snap.state
    run = np.flatnonzero(snap.running)
    next_ideal = st.arrival[run] + st.ttft[run] + st.delivered[run] / st.speed[run]
    slack = np.maximum(next_ideal + st.lag[run] - now, 0.0)
    per_admission = float(np.mean(snap.start_delay[admit])) or 1e-3
    cap = max(1, int(np.percentile(slack, 10) / per_admission)) if slack.size else len(preempt)
    return preempt[:cap] if len(preempt) > cap else preempt
