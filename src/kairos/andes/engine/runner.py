"""Executing one scheduled iteration on the model: swaps, one forward pass, sampling.

The scheduler decided which tokens of which requests to compute (`SchedulerOutput`) and
where their KV lives (block tables); the runner turns that into tensors. A step of `n` tokens
for a request with `computed` tokens already cached feeds tokens `computed .. computed+n-1`
at those positions: a prefill, a prefill chunk, a recompute after preemption (prompt plus
generated text) and a decode are all the same operation.

The runner also decides, per iteration, whether the decode batch's contexts gathered last
iteration can be reused (`attention.py`, "Staging"): only when this iteration decodes exactly
the sequences the last one did, each one token further, with no swap in between. Any other
iteration first flushes what the reuses wrote only to the staged rows into the paged cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.attention import AttentionBatch, StageMode
from kairos.andes.engine.kv_cache import KVCache
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.sampler import sample
from kairos.andes.scheduler import SchedulerOutput

STAGE_HEADROOM_BLOCKS = 4  # a fill gathers this many blocks more than needed: 64 reuses


class ModelRunner:
    def __init__(
        self,
        model: LlamaForCausalLM,
        cache: KVCache,
        device: torch.device,
        *,
        stage_decodes: bool = False,
    ) -> None:
        self.model = model
        self.cache = cache
        self.device = device
        self.stage_decodes = stage_decodes
        # what the staged contexts hold: request ids, each row's next position, capacity
        self._staged: tuple[tuple[str, ...], list[int], int] | None = None
        # tokens written only to the staged rows: (paged slots, staged flat slots) per reuse
        self._unflushed: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.stage_counts = {"off": 0, "fill": 0, "reuse": 0}
        self.last_stage: StageMode = "off"  # the last iteration's (a reuse gathers nothing)

    def _stage_mode(
        self, out: SchedulerOutput, rids: list[str], starts: list[int], lengths: list[int]
    ) -> tuple[StageMode, int]:
        """How this iteration uses staging, and how many blocks a fill gathers per row."""
        mode: StageMode = "off"
        blocks = 0
        if self.stage_decodes and not out.block_copies and all(n == 1 for n in lengths):
            bs = self.cache.block_size
            prev = self._staged
            if prev and prev[0] == tuple(rids) and prev[1] == starts and max(starts) < prev[2]:
                mode, blocks = "reuse", prev[2] // bs
            else:
                mode = "fill"
                blocks = -(-(max(starts) + 1) // bs) + STAGE_HEADROOM_BLOCKS
        if mode == "off":
            self._unstage()
        else:
            if mode == "fill":
                self.flush_staged()  # before this iteration's swaps and gathers read the cache
            self._staged = (tuple(rids), [s + 1 for s in starts], blocks * self.cache.block_size)
        self.stage_counts[mode] += 1
        self.last_stage = mode
        return mode, blocks

    def _unstage(self) -> None:
        self.flush_staged()  # before this iteration's swaps and gathers read the cache
        if self._staged is not None:
            for layer in self.cache.layers:
                layer.unstage()
        self._staged = None

    def flush_staged(self) -> None:
        """Copy the tokens that reuse iterations wrote only to the staged rows into their
        paged slots (one gather and one scatter per layer and tensor)."""
        if not self._unflushed:
            return
        slots = torch.cat([s for s, _ in self._unflushed])
        rows = torch.cat([r for _, r in self._unflushed])
        self._unflushed.clear()
        for layer in self.cache.layers:
            for paged, staged in ((layer.k, layer.staged_k), (layer.v, layer.staged_v)):
                assert staged is not None
                hkv, _, _, d = paged.shape
                src = staged.view(hkv, -1, d).index_select(1, rows)
                paged.view(hkv, -1, d).index_copy_(1, slots, src)

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
        if not out.steps:  # swaps alone (or nothing): the next decode batch regathers
            self._unstage()
            self.last_stage = "off"
            self.apply_swaps(out)
            return {}
        starts: list[int] = []
        lengths: list[int] = []
        tables: list[Sequence[int]] = []
        ids: list[int] = []
        rids_all: list[str] = []
        for step in out.steps:
            r = step.request
            rid = r.request_id
            start = r.computed
            rids_all.append(rid)
            starts.append(start)
            lengths.append(step.tokens)
            tables.append(block_tables[rid])
            ids.extend(token_ids[rid][start : start + step.tokens])
        mode, blocks = self._stage_mode(out, rids_all, starts, lengths)  # flushes unless reuse
        self.apply_swaps(out)
        batch = AttentionBatch.build(
            starts, lengths, tables, self.cache.block_size, self.device, mode, blocks
        )
        if mode == "reuse":
            assert batch.slot_mapping is not None and batch.stage_slots is not None
            self._unflushed.append((batch.slot_mapping, batch.stage_slots))
        if len(ids) == len(starts):  # decodes only: one position each
            positions = torch.tensor(starts, device=self.device)
        else:
            spans = [np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)]
            positions = torch.from_numpy(np.concatenate(spans)).to(self.device)
        input_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        logits = self.model(input_ids, positions, batch, self.cache.layers)
        rows = [i for i, s in enumerate(out.steps) if s.samples]
        if not rows:
            return {}
        if len(rows) < len(rids_all):  # a prefill chunk that ends mid-prompt samples nothing
            logits = logits[rows]
        rids = [rids_all[i] for i in rows]
        tokens = sample(logits, [params[r] for r in rids], [generators[r] for r in rids])
        return dict(zip(rids, tokens, strict=True))
