"""Buffer-paced admission: start a prefill only when every streaming user's text covers it.

On vLLM 0.6's prefill-only iterations every running stream gets no token while a prefill
runs. Issue 17's E4 on Llama-3.1-70B (FCFS at the paper's 0.88) lost 90% of FCFS's QoE to
those stalls, with the KV cache never full, so Andes' memory lever never acted. A user with
buffered text does not notice a stall shorter than the buffer: a user who has `k` tokens
with lag `D` runs dry at `a + T0 + k/s + D` (the ideal time of token k+1 plus the lag). So
admissions are cut, in their priority order, before the first prefill (a new prompt, or a
recompute restore) that would make the iteration's prefill time, times `margin`, exceed the
smallest such slack among the running streams. Decode iterations in between refill the
buffers (a decode step is faster than any reader), so a held prompt is admitted once the
streams are ahead or have finished; a long prompt can therefore wait longer than under FCFS.

The paper's refiner weighs an admission's stall against its gain but runs only when the
solver runs (selective triggering); this guard applies to every admission. A parameter of
`AndesConfig` (`pace_prefills`, off by default); docs/andes.md has what it buys and costs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kairos.andes.policy import SchedulerView
from kairos.andes.request import Request, Status


def buffered_slack(running: Sequence[Request], now: float) -> float:
    """Seconds until the first running stream's user runs out of delivered text (infinite
    when no running stream has delivered a token)."""
    slack = math.inf
    for r in running:
        q = r.qoe
        if q.k > 0:
            slack = min(slack, r.arrival + r.ttft_s + q.k / r.tokens_per_s + q.lag - now)
    return slack


def pace_admissions(view: SchedulerView, admit: list[Request], margin: float) -> list[Request]:
    """`admit` cut before the first prefill whose iteration would outlast the buffers."""
    slack = buffered_slack(view.running, view.now)
    if math.isinf(slack):
        return admit
    tokens: list[int] = []
    context: list[int] = []
    for i, r in enumerate(admit):
        if r.status is Status.WAITING:  # it needs a prefill (a swapped one a copy)
            tokens.append(r.to_compute)
            context.append(r.computed)
            if view.latency.batch_prefill_time(tokens, context) * margin > slack:
                return admit[:i]
    return admit
