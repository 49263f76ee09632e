"""Choosing the next token: greedy, temperature, nucleus (top-p), with per-request seeds.

A request with a seed owns a `torch.Generator`, so its samples do not depend on what else is
in the batch or on preemption; unseeded requests share the engine's generator.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kairos.andes.engine.api import SamplingParams


def sample(
    logits: torch.Tensor,
    params: Sequence[SamplingParams],
    generators: Sequence[torch.Generator],
) -> list[int]:
    """logits [S, vocab] (any device); one token per row."""
    out: list[int] = []
    greedy = logits.argmax(dim=-1).tolist()
    for row, p, gen in zip(range(logits.shape[0]), params, generators, strict=True):
        if p.temperature == 0:
            out.append(int(greedy[row]))
            continue
        probs = torch.softmax(logits[row].to("cpu", torch.float64) / p.temperature, dim=-1)
        if p.top_p < 1:
            sorted_p, order = probs.sort(descending=True)
            keep = sorted_p.cumsum(0) - sorted_p < p.top_p  # the smallest set reaching top_p
            probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
        out.append(int(torch.multinomial(probs, 1, generator=gen).item()))
    return out
