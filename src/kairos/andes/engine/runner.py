"""Executing one scheduled iteration on the model: swaps, one forward pass, sampling.

The scheduler decided which tokens of which requests to compute (`SchedulerOutput`) and
where their KV lives (block tables); the runner turns that into tensors. A step of `n` tokens
for a request with `computed` tokens already cached feeds tokens `computed .. computed+n-1`
at those positions: a prefill, a prefill chunk, a recompute after preemption (prompt plus
generated text) and a decode are all the same operation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.attention import AttentionBatch
from kairos.andes.engine.kv_cache import KVCache
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.sampler import sample
from kairos.andes.scheduler import SchedulerOutput


class ModelRunner:
    def __init__(self, model: LlamaForCausalLM, cache: KVCache, device: torch.device) -> None:
        self.model = model
        self.cache = cache
        self.device = device

    def apply_swaps(self, out: SchedulerOutput) -> None:
        for direction, mapping in out.block_copies:
            if direction == "out":
                self.cache.swap_out(mapping)
            else:
                self.cache.swap_in(mapping)

    @torch.inference_mode()
    def execute(
        self,
        out: SchedulerOutput,
        token_ids: Mapping[str, Sequence[int]],
        block_tables: Mapping[str, Sequence[int]],
        params: Mapping[str, SamplingParams],
        generators: Mapping[str, torch.Generator],
    ) -> dict[str, int]:
        """Run the iteration; returns the new token of every step that completes a context."""
        self.apply_swaps(out)
        if not out.steps:
            return {}
        starts: list[int] = []
        lengths: list[int] = []
        tables: list[Sequence[int]] = []
        ids: list[int] = []
        for step in out.steps:
            r = step.request
            rid = r.request_id
            start = r.computed
            starts.append(start)
            lengths.append(step.tokens)
            tables.append(block_tables[rid])
            ids.extend(token_ids[rid][start : start + step.tokens])
        batch = AttentionBatch.build(starts, lengths, tables, self.cache.block_size, self.device)
        positions = torch.cat(
            [torch.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)]
        ).to(self.device)
        input_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        logits = self.model(input_ids, positions, batch, self.cache.layers)
        rows = [i for i, s in enumerate(out.steps) if s.samples]
        if not rows:
            return {}
        rids = [out.steps[i].request.request_id for i in rows]
        tokens = sample(logits[rows], [params[r] for r in rids], [generators[r] for r in rids])
        return dict(zip(rids, tokens, strict=True))
