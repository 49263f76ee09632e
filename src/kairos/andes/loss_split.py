"""Where a run's QoE went: the wait for the first token, or the stalls after it.

Andes' lever is memory: it pauses users with buffered text so that waiting requests get
their first token sooner. Whether that lever can act depends on why the baseline loses QoE.
E4 at the paper's FCFS QoE (0.88) on the Llama-3.1-70B profile loses it mostly to streams
stalling behind prefill-only iterations, with the KV cache never full, and Andes never
preempts (docs/andes.md, "Which regime E4 is in"). This module splits each finished
request's QoE loss into two counterfactuals over its own token timeline:

- `ttft_only`: every token delivered the instant the first one was (only the first-token
  wait counts). For a lateness `D = max(t_1 - a - T0, 0)` and n tokens this is
  `1 - D / (D + (n-1)/(2s))` (n D / (n D + n(n-1)/(2s))).
- `stall_only`: the whole timeline shifted earlier by the first token's lateness, so the
  first token is on time and the gaps after it are as delivered (only what happens after
  the first token counts).

A run whose `stall_only` is far below `ttft_only` loses QoE to stalls (decodes waiting on
prefills), which no reordering of admissions removes; one whose `ttft_only` is lower loses
it to queueing for a first token, which is what pausing buffered users can buy back. The
two are diagnostics, not bounds: QoE is not monotone in token delays (docs/andes.md, "Where
we differ" item 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kairos.andes.qoe import closed_form_qoe
from kairos.andes.request import Request


def timeline_qoe(times: np.ndarray, arrival: float, ttft: float, speed: float) -> float:
    """QoE of a finished stream (spec section 2), vectorised: the lag of token j is the
    running maximum of its lateness `t_j - I_j` (and 0)."""
    n = times.size
    if n == 0:
        return 0.0
    ideal = arrival + ttft + np.arange(n) / speed
    lags = np.maximum.accumulate(np.maximum(times - ideal, 0.0))
    state = (np.array(n), np.array(lags[-1]), np.array(lags.sum()), np.array(speed))
    return float(closed_form_qoe(*state))


@dataclass(frozen=True)
class LossSplit:
    actual: float  # mean QoE as delivered
    ttft_only: float  # mean QoE if every token came with the first
    stall_only: float  # mean QoE if the first token was on time, the rest shifted with it


def loss_split(requests: Sequence[Request]) -> LossSplit:
    """The mean of each counterfactual over the requests that delivered a token."""
    actual, first, after = [], [], []
    for r in requests:
        t = np.asarray(r.token_times, dtype=np.float64)
        if t.size == 0:
            continue
        actual.append(timeline_qoe(t, r.arrival, r.ttft_s, r.tokens_per_s))
        first.append(timeline_qoe(np.full(t.size, t[0]), r.arrival, r.ttft_s, r.tokens_per_s))
        late = max(t[0] - r.arrival - r.ttft_s, 0.0)
        after.append(timeline_qoe(t - late, r.arrival, r.ttft_s, r.tokens_per_s))
    if not actual:
        return LossSplit(float("nan"), float("nan"), float("nan"))
    return LossSplit(float(np.mean(actual)), float(np.mean(first)), float(np.mean(after)))
