"""How long one engine iteration takes under a latency profile.

The simulated worker charges this as the iteration's duration; the torch engine adds it up to
compare its measured busy time with its profile (drift). It lives apart from both so neither
imports the other.
"""

from __future__ import annotations

from kairos.andes.latency import LatencyModel
from kairos.andes.scheduler import SchedulerOutput


def decode_batch(out: SchedulerOutput) -> tuple[str, ...] | None:
    """The request ids of an all-decode iteration without swaps, else None. Two iterations in
    a row with the same ids decode the same batch, which an engine that keeps its batch's
    contexts gathered (ours on CPU) need not regather (it also refills when its headroom runs
    out, about once in 50-64 iterations; that is left to the fit)."""
    if out.block_copies or not all(s.is_decode for s in out.steps):
        return None
    return tuple(s.request.request_id for s in out.steps)


def iteration_time(latency: LatencyModel, out: SchedulerOutput, regather: bool = True) -> float:
    """Prefill-only steps cost one prefill iteration over their prompts (the linear terms on
    the summed tokens, attention on each prompt's own length); decode steps one decode
    iteration over the batch's context, plus the regather cost unless `regather` is False
    (the batch is the last iteration's); a mixed (chunked) step a decode iteration plus the
    prefill chunks' extra compute, each chunk's attention over its own prompt's cached
    context. Swap copies block the iteration."""
    decodes = context = longest = 0  # one pass: the engine calls this every iteration
    chunks: list[int] = []
    cached: list[int] = []
    for step in out.steps:
        if step.is_decode:
            decodes += 1
            context += step.request.context_len
            longest = max(longest, step.request.context_len)
        else:
            chunks.append(step.tokens)
            cached.append(step.cached)
    t = 0.0
    if decodes:
        t += float(latency.decode_time(decodes, context))
        if regather:
            t += latency.regather_time(decodes * longest)
        if chunks:
            extra = latency.batch_prefill_time(chunks, cached) - float(latency.prefill_time(1))
            t += max(0.0, extra)
    elif chunks:
        t += latency.batch_prefill_time(chunks, cached)
    for r, _ in out.swap_in:
        t += float(latency.swap_time(r.context_len))
    for r, _ in out.swap_out:
        t += float(latency.swap_time(r.context_len))
    return t
