"""The profiler's arithmetic (spec 3.3): from measured iteration times to the packing limit `c`,
the scaling limit `d` and the overhead coefficients `alpha` and `beta` of Eq. 3.2.

Measuring is the driver's and the backends' job; these functions only read the numbers, so the
simulator and the real backends choose `c` and `d` the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kairos.fluid.core.model import Width, height

O_TH = 0.10  # a co-located trial must cut the time per trial-iteration by more than 10%
C_MAX = 8
DELTA = 0.05  # one more data-parallel worker must cut the iteration time by more than 5%
W_MAX = 8


def packing_benefit(avg_times: Sequence[float]) -> list[float]:
    """`O^p` for p = 2, 3, ... (Eq. 3.1) from the mean per-iteration time of `p` co-located
    trials, `avg_times[p - 1]`: the relative cut in time per trial-iteration from p-1 to p."""
    return [
        1.0 - (p - 1) / p * avg_times[p - 1] / avg_times[p - 2]
        for p in range(2, len(avg_times) + 1)
    ]


def packing_limit(avg_times: Sequence[float], o_th: float = O_TH, c_max: int = C_MAX) -> int:
    """The largest `p` whose every step `q = 2..p` still pays (`O^q > o_th`); 1 = no packing."""
    c = 1
    for p, benefit in enumerate(packing_benefit(avg_times[:c_max]), start=2):
        if benefit <= o_th:
            break
        c = p
    return c


def fit_alpha(avg_times: Sequence[float], c: int) -> float:
    """`alpha` from `h_{1/c} = h_1 alpha^(c-1)`, clipped into Lemma 4's `[1, c/(c-1))`
    (measured times can fall outside it: 1, 1.79, 2.4 give c = 3 and alpha 1.549)."""
    if c <= 1:
        return 1.0
    alpha = (avg_times[c - 1] / avg_times[0]) ** (1.0 / (c - 1))
    return min(max(alpha, 1.0), math.nextafter(c / (c - 1), 0.0))


def ring_allreduce_time(
    w: int, steps: int, tau: float, grad_bytes: float, bandwidth: float, latency: float
) -> float:
    """Iteration time at `w` data-parallel workers with the global batch fixed (spec 3.3):
    compute splits `w` ways, a ring all-reduce moves `2(w-1)/w` of the gradients per step."""
    comm = 2 * (w - 1) / w * grad_bytes / bandwidth + 2 * (w - 1) * latency
    return steps * (tau / w + comm)


def scaling_limit(times: Sequence[float], delta: float = DELTA, w_max: int = W_MAX) -> int:
    """The largest `w <= w_max` whose every step from 2 up cut the time by more than `delta`;
    `times[w - 1]` is the iteration time at `w` workers."""
    d = 1
    for w in range(2, min(len(times), w_max) + 1):
        if times[w - 1] > (1.0 - delta) * times[w - 2]:
            break
        d = w
    return d


def fit_beta(times: Sequence[float], d: int) -> float:
    """`beta` from `w t_w / t_1 = beta^(w-1)` by least squares on logs over w = 2..d, clipped
    into Lemma 6's `[1, 1 + 1/d)`."""
    if d <= 1:
        return 1.0
    xs = [w - 1 for w in range(2, d + 1)]
    ys = [math.log(w * times[w - 1] / times[0]) for w in range(2, d + 1)]
    beta = math.exp(sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs))
    return min(max(beta, 1.0), math.nextafter(1.0 + 1.0 / d, 0.0))


def per_gpu_time(measured: float, width: Width, alpha: float, beta: float) -> float:
    """A per-iteration time measured at `width`, converted to width 1 through Eq. 3.2."""
    return measured / (height(1.0, width, alpha, beta))


def ema(old: float | None, new: float, weight: float = 0.5) -> float:
    """The driver's running estimate of `t1` (spec 3.5: weight 0.5 on the newest)."""
    return new if old is None else weight * new + (1.0 - weight) * old
