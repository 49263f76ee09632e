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

Which prompt goes first (`paced_order`): as Andes ranks them, shortest prefill first (a
lower mean TTFT, but long prompts wait for a lull), or highest response ratio next; an
aging bound puts a prompt overdue by `starve_after` TTFT targets first. And instead of
holding a prompt whole, `paced_chunks` runs what fits of it now as a chunk of a
prefill-only iteration (the scheduler parks the rest with its KV). At E4's Llama point
shortest-first with an aging bound in TTFT targets meets every part of issue 17's
must-show 2 but not max TTFT within 2x FCFS's: a long prompt's target is longer, so it ages
last, and a solve that passes over an aged prompt admits others into its buffers. Aging
in seconds (`starve_after_s`), overdue prompts added to every admission (`with_aged`) and
admitted together once the first fits (`aged_together`) meet both; chunks did no better
than holding (docs/andes.md, "Paced order and chunks").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kairos.andes.latency import LatencyModel
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


def pace_admissions(
    view: SchedulerView,
    admit: list[Request],
    margin: float,
    backfill: bool = False,
    starve_after: float | None = None,
    starve_after_s: float | None = None,
    aged_together: bool = False,
    aged_unpaced: bool = False,
    aged_ids: frozenset[str] = frozenset(),
) -> list[Request]:
    """`admit` cut before the first prefill whose iteration would outlast the buffers. With
    `backfill`, a prefill that does not fit is skipped and later (shorter) ones that still
    fit go on, unless the skipped one is overdue by `starve_after` TTFT targets (or
    `starve_after_s` seconds). With `aged_together`, once an overdue prompt fits, the
    overdue ones after it join its iteration unpaced (a burst of them shares one wait for
    the buffers instead of one each); with `aged_unpaced`, no overdue prompt is paced. Ids in
    `aged_ids` are overdue too (bounded overtaking, policies/overtaking.py)."""
    slack = buffered_slack(view.running, view.now)
    if math.isinf(slack):
        return admit
    tokens: list[int] = []
    context: list[int] = []
    out: list[Request] = []
    aged_in = False  # an overdue prompt got in: with `aged_together` its peers follow
    for r in admit:
        if r.status is Status.WAITING:  # it needs a prefill (a swapped one a copy)
            aged = r.generated == 0 and _overdue(
                r, view.now, starve_after, starve_after_s, aged_ids
            )
            free = aged and (aged_unpaced or (aged_together and aged_in))
            t = view.latency.batch_prefill_time([*tokens, r.to_compute], [*context, r.computed])
            if t * margin > slack and not free:
                if not backfill or aged:
                    return out
                continue
            aged_in = aged_in or aged
            tokens.append(r.to_compute)
            context.append(r.computed)
        out.append(r)
    return out


def with_aged(
    view: SchedulerView,
    admit: Sequence[Request],
    after: float | None,
    after_s: float | None,
    aged_ids: frozenset[str] = frozenset(),
) -> list[Request]:
    """`admit` with the overdue prompts of the queue in it, oldest first, even those the
    solver did not select: otherwise a solve that passes over an overdue prompt admits
    others into the buffers it was waiting for (E4, seed 0: two such solves before each got
    in). Only as many as the free KV cache holds beside `admit`: when memory is full, a
    forced prompt blocks admission behind it (the knapsack's rule learned it, item 15),
    and under a burst (E2) forcing the oldest turns Andes into FCFS."""
    have = {id(r) for r in admit}
    room = view.free_blocks - view.watermark_blocks
    room -= sum(-(-r.context_len // view.block_size) for r in admit)
    extra: list[Request] = []
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
    r: Request,
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
    queue: Sequence[Request],
    now: float,
    order: str,
    starve_after: float | None,
    latency: LatencyModel | None = None,
    starve_after_s: float | None = None,
    aged_ids: frozenset[str] = frozenset(),
) -> list[Request]:
    """`queue` for paced admission, swapped requests first: as given ("admission"),
    shortest prefill first ("shortest", which lowers the mean wait for a first token), or
    highest response ratio next ("hrrn": (wait + prefill) / prefill, shortest first among
    equal waits but a long prompt's ratio grows as it waits, so it cannot starve; needs
    `latency`). A request with no token yet whose user has waited more than `starve_after`
    TTFT targets past due goes first, oldest first."""
    if order == "admission":
        return list(queue)
    swapped = [r for r in queue if r.status is Status.SWAPPED]
    rest = [r for r in queue if r.status is not Status.SWAPPED]
    if order == "hrrn":
        if latency is None:
            raise ValueError("hrrn order needs the latency model")
        p = latency.prefill_time(
            np.array([r.to_compute for r in rest]), np.array([r.computed for r in rest])
        )
        ratio = [(now - r.arrival + float(t)) / float(t) for r, t in zip(rest, p, strict=True)]
        rest = [r for _, r in sorted(zip(ratio, rest, strict=True), key=lambda x: -x[0])]
    else:
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


def is_prefilling(r: Request) -> bool:
    """Running but with prompt (or recompute) tokens still to compute: no token to give yet."""
    return r.to_compute > 1 or r.generated == 0


def paced_chunks(
    view: SchedulerView,
    admit: Sequence[Request],
    margin: float,
    order: str = "admission",
    min_chunk: int = 256,
    starve_after: float | None = None,
) -> list[tuple[Request, int]] | None:
    """Prefill chunks for this iteration that `margin` x their time fits the buffers.

    Instead of holding a prompt until the buffers cover all of it (`pace_admissions`), the
    prompt runs as far as the buffers allow now and goes on after the decode iterations
    that refill them, so its first token is not held behind the slowest buffer. Prompts go
    in `order` ("admission": running ones in admission order, then this decision's
    admissions; "shortest": fewest tokens left first); the last may be cut to a chunk,
    never below `min_chunk` tokens (a chunk pays the iteration's fixed cost). None when no
    running stream has text to protect (every prompt whole, as vLLM 0.6); an empty list:
    a decode iteration now. Streams still prefilling are not counted: they have no text."""
    decoding = [r for r in view.running if not is_prefilling(r)]
    slack = buffered_slack(decoding, view.now)
    if math.isinf(slack):
        return None
    queue = [r for r in view.running if is_prefilling(r)]
    queue += [r for r in admit if r.status is Status.WAITING]
    queue = paced_order(queue, view.now, order, starve_after, view.latency)
    lat = view.latency
    # the decode that follows the chunk is also before the next token: leave room for it
    ctx = sum(r.context_len for r in decoding)
    budget = slack / margin - float(lat.decode_time(len(decoding), ctx))
    tokens: list[int] = []
    context: list[int] = []
    chunks: list[tuple[Request, int]] = []
    for r in queue:
        whole = r.to_compute
        if lat.batch_prefill_time([*tokens, whole], [*context, r.computed]) <= budget:
            chunks.append((r, whole))
            tokens.append(whole)
            context.append(r.computed)
            continue
        lo, hi = 0, whole  # the largest n that fits: lo fits (or is 0), hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if lat.batch_prefill_time([*tokens, mid], [*context, r.computed]) <= budget:
                lo = mid
            else:
                hi = mid
        if lo >= min(min_chunk, whole):
            chunks.append((r, lo))
        break
    return chunks
