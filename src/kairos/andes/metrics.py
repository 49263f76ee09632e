"""Per-request stream metrics beside QoE, named as `vllm bench serve` names them.

TTFT (time to first token), TPOT (time per output token after the first), ITL (gaps between
consecutive tokens), E2EL (end-to-end latency), TDS (token delivery speed, the paper's metric)
and the silence-time ratio of a voice stream played at the user's speed (experiment E9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StreamMetrics:
    ttft: float
    tpot: float
    tds: float
    e2el: float
    itl: tuple[float, ...]


def stream_metrics(times: Sequence[float] | np.ndarray, arrival: float) -> StreamMetrics:
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        nan = math.nan
        return StreamMetrics(nan, nan, nan, nan, ())
    span = float(t[-1] - t[0])
    k = t.size
    tpot = span / (k - 1) if k > 1 else math.nan
    tds = (k - 1) / span if k > 1 and span > 0 else math.nan
    return StreamMetrics(
        ttft=float(t[0] - arrival),
        tpot=tpot,
        tds=tds,
        e2el=float(t[-1] - arrival),
        itl=tuple(np.diff(t).tolist()),
    )


def silence_ratio(
    times: Sequence[float] | np.ndarray, arrival: float, ttft: float, speed: float
) -> float:
    """Share of the interaction (arrival to end of playback) during which nothing is spoken.

    Token j plays during `[C_j, C_j + 1/speed)` with the pacer's consumption times `C_j`; those
    intervals never overlap, so the silence is the span minus `n / speed`.
    """
    t = np.sort(np.asarray(times, dtype=np.float64))
    if t.size == 0:
        return 1.0
    c = -math.inf
    for j, tj in enumerate(t):
        ideal = arrival + ttft + j / speed
        c = max(tj, ideal) if j == 0 else max(tj, c + 1.0 / speed)
    end = c + 1.0 / speed
    total = end - arrival
    return float(max(0.0, 1.0 - (t.size / speed) / total)) if total > 0 else 0.0
