"""Buffer-paced admission: start a prefill only when every streaming user's text covers it.

On vLLM 0.6's prefill-only iterations every running stream gets no token while a prefill
runs. E4 on Llama-3.1-70B (FCFS at the paper's 0.88) loses most of FCFS's QoE to those
stalls, with the KV cache never full, so Andes' memory lever never acts (docs/andes.md). A
user with buffered text does not notice a stall shorter than the buffer: a user who has `k`
tokens with lag `D` runs dry at `a + T0 + k/s + D` (the ideal time of token k+1 plus the lag). So
admissions are cut, in their priority order, before the first prefill (a new prompt, or a
recompute restore) that would make the iteration's prefill time, times `margin`, exceed the
smallest such slack among the running streams. Decode iterations in between refill the
buffers (a decode step is faster than any reader), so a held prompt is admitted once the
streams are ahead or have finished; a long prompt can therefore wait longer than under FCFS.

The paper's refiner weighs an admission's stall against its gain but runs only when the
solver runs (selective triggering); this guard applies to every admission. Its settings are
`PacingConfig` (policies/pacer.py, which applies them to each decision); docs/andes.md has
what it buys and costs.

Which prompt goes first (`paced_order`): as Andes ranks them, or shortest prefill first (a
lower mean TTFT, but long prompts wait for a lull), with an aging rule that puts overdue
prompts first: bounded overtaking (policies/overtaking.py, the default), or a bound in TTFT
targets past due (`starve_after`) or in seconds (`starve_after_s`). With a bound in targets
a long prompt ages last (its target is longer); with one in seconds a burst ages the whole
queue; overtaking counts the unfairness itself. Overdue prompts can join every admission
(`with_aged`) and, once the first fits, share its iteration (`aged_together`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kairos.andes.policy import SchedulerView
from kairos.andes.request import RequestView, Status


def buffered_slack(running: Sequence[RequestView], now: float) -> float:
    """Seconds until the first running stream's user runs out of delivered text (infinite
    when no running stream has delivered a token)."""
    slack = math.inf
    for r in running:
        q = r.qoe
        if q.k > 0:
            slack = min(slack, r.arrival + r.ttft_s + q.k / r.tokens_per_s + q.lag - now)
    return slack


def pace_admissions(
    view: SchedulerView,
    admit: list[RequestView],
    margin: float,
    starve_after: float | None = None,
    starve_after_s: float | None = None,
    aged_together: bool = False,
    aged_ids: frozenset[str] = frozenset(),
) -> list[RequestView]:
    """`admit` cut before the first prefill whose iteration would outlast the buffers. With
    `aged_together`, once a prompt overdue by `starve_after` TTFT targets (or `starve_after_s`
    seconds, or named in `aged_ids`: bounded overtaking, policies/overtaking.py) fits, the
    overdue ones after it join its iteration unpaced (a burst of them shares one wait for
    the buffers instead of one each)."""
    slack = buffered_slack(view.running, view.now)
    if math.isinf(slack):
        return admit
    prefills = [r for r in admit if r.status is Status.WAITING]  # a swapped one is a copy
    times = iter(
        view.latency.prefix_prefill_times(
            [r.to_compute for r in prefills], [r.computed for r in prefills]
        ).tolist()
    )  # each prefill's iteration with every prefill admitted before it
    out: list[RequestView] = []
    aged_in = False  # an overdue prompt got in: with `aged_together` its peers follow
    for r in admit:
        if r.status is Status.WAITING:
            aged = r.generated == 0 and _overdue(
                r, view.now, starve_after, starve_after_s, aged_ids
            )
            free = aged and aged_together and aged_in
            if next(times) * margin > slack and not free:
                return out
            aged_in = aged_in or aged
        out.append(r)
    return out


def with_aged(
    view: SchedulerView,
    admit: Sequence[RequestView],
    after: float | None,
    after_s: float | None,
    aged_ids: frozenset[str] = frozenset(),
) -> list[RequestView]:
    """`admit` with the overdue prompts of the queue in it, oldest first, even those the
    solver did not select: otherwise a solve that passes over an overdue prompt admits
    others into the buffers it was waiting for (E4, seed 0: two such solves before each got
    in). Only as many as the free KV cache holds beside `admit`: when memory is full, a
    forced prompt blocks admission behind it (the knapsack's rule learned it, item 15),
    and under a burst (E2) forcing the oldest turns Andes into FCFS."""
    have = {id(r) for r in admit}
    room = view.free_blocks - view.watermark_blocks
    room -= sum(-(-r.context_len // view.block_size) for r in admit)
    extra: list[RequestView] = []
    for r in sorted(view.waiting, key=lambda r: r.arrival):
        if id(r) in have or r.status is not Status.WAITING or r.generated > 0:
            continue
        if not _overdue(r, view.now, after, after_s, aged_ids):
            continue
        need = -(-r.context_len // view.block_size)
        if need > room:
            break
        room -= need
        extra.append(r)
    return [*extra, *admit]


def _overdue(
    r: RequestView,
    now: float,
    after: float | None,
    after_s: float | None = None,
    aged_ids: frozenset[str] = frozenset(),
) -> bool:
    """Waiting for a first token more than `after` TTFT targets past its due time, or (with
    `after_s`) more than `after_s` seconds since it arrived, or named in `aged_ids`. The
    second bound is the same for every prompt: a bound in targets ages a long prompt later
    (its target is longer), while the longest waits it should cap are those of long prompts."""
    if r.request_id in aged_ids:
        return True
    wait = now - r.arrival
    if after is not None and wait > (1.0 + after) * r.ttft_s:
        return True
    return after_s is not None and wait > after_s


def paced_order(
    queue: Sequence[RequestView],
    now: float,
    order: str,
    starve_after: float | None,
    starve_after_s: float | None = None,
    aged_ids: frozenset[str] = frozenset(),
) -> list[RequestView]:
    """`queue` for paced admission, swapped requests first: as given ("admission"), or
    shortest prefill first ("shortest", which lowers the mean wait for a first token). A
    request with no token yet that is overdue (`starve_after` TTFT targets past due,
    `starve_after_s` seconds, or named in `aged_ids`) goes first, oldest first."""
    if order == "admission":
        return list(queue)
    swapped = [r for r in queue if r.status is Status.SWAPPED]
    rest = [r for r in queue if r.status is not Status.SWAPPED]
    rest.sort(key=lambda r: r.to_compute)
    if starve_after is not None or starve_after_s is not None or aged_ids:
        old = [
            r
            for r in rest
            if r.generated == 0 and _overdue(r, now, starve_after, starve_after_s, aged_ids)
        ]
        if old:
            old.sort(key=lambda r: r.arrival)
            seen = {id(r) for r in old}
            rest = [*old, *(r for r in rest if id(r) not in seen)]
    return [*swapped, *rest]
