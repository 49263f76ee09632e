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

from kairos.report.stats import summarize


@dataclass(frozen=True)
class StreamMetrics:
    ttft: float
    tpot: float
    tds: float
    e2el: float
    itl: tuple[float, ...]


def first_token_wait(times: Sequence[float] | np.ndarray, arrival: float) -> float:
    """TTFT alone (the simulator asks it of every request; no gaps built)."""
    return float(times[0] - arrival) if len(times) else math.nan


def delivery_speed(times: Sequence[float] | np.ndarray) -> float:
    """TDS alone: tokens after the first per second of the stream's span."""
    span = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    return (len(times) - 1) / span if span > 0 else math.nan


def stream_metrics(times: Sequence[float] | np.ndarray, arrival: float) -> StreamMetrics:
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        nan = math.nan
        return StreamMetrics(nan, nan, nan, nan, ())
    k = t.size
    return StreamMetrics(
        ttft=first_token_wait(t, arrival),
        tpot=float(t[-1] - t[0]) / (k - 1) if k > 1 else math.nan,
        tds=delivery_speed(t),
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


def tail_metrics(qoe: np.ndarray, ttft: np.ndarray, prompt_lens: np.ndarray) -> dict[str, float]:
    """The tails an average hides: TTFT percentiles and the longest prompts' QoE.

    A policy that ranks by gain per unit of memory (Andes divides by context length) can
    raise the average while the longest prompts wait: `qoe_long_prompts` is the mean QoE of
    the longest-prompt decile (ties at the cut included), `qoe_other_prompts` of the rest.
    TTFT of a request that never got a token is not a number and is left out.
    """
    t = summarize(ttft)
    out = {"ttft_p50": t.p50, "ttft_p90": t.p90, "ttft_p99": t.p99, "ttft_max": t.max}
    q = np.asarray(qoe, dtype=np.float64)
    p = np.asarray(prompt_lens, dtype=np.float64)
    if q.size == 0:
        return out | {"qoe_long_prompts": math.nan, "qoe_other_prompts": math.nan}
    long = p >= np.percentile(p, 90)
    rest = float(q[~long].mean()) if (~long).any() else math.nan
    return out | {"qoe_long_prompts": float(q[long].mean()), "qoe_other_prompts": rest}
