"""Executing one scheduled iteration on the model: swaps, one forward pass, sampling.

The scheduler decided which tokens of which requests to compute (an `Iteration` record of
kairos.andes.decisions) and where their KV lives (block tables); the runner turns that into
tensors. A step of `n` tokens for a request with `cached` tokens already in the cache feeds
tokens `cached .. cached+n-1` at those positions: a prefill, a prefill chunk, a recompute
after preemption (prompt plus generated text) and a decode are all the same operation.

How the forward pass runs can be handed to one `RunnerHook`: on a CPU, engine/cpu/ stages
decode contexts between iterations, splits decode batches over lanes and products over the
threads (engine/cpu/hook.py). Without a hook every iteration is one pass on this thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from kairos.andes.decisions import Iteration
from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.attention import AttentionBatch, StageMode
from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.kv_cache import KVCache, LayerKV
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.sampler import sample


@dataclass
class Rows:
    """An iteration's rows: per step its request, first position, token count, block table,
    and all the steps' input token ids in order."""

    rids: list[str]
    starts: list[int]
    lengths: list[int]
    tables: list[Sequence[int]]
    ids: list[int]

    @property
    def decodes_only(self) -> bool:
        return len(self.ids) == len(self.starts)


class RunnerHook(Protocol):
    """Another way to run an iteration's forward pass (engine/cpu/hook.py)."""

    def forward(self, runner: ModelRunner, decision: Iteration, rows: Rows) -> torch.Tensor:
        """The logits of the rows, the swaps applied (`runner.apply_swaps`) before anything
        reads the cache."""
        ...

    def idle(self) -> None:
        """An iteration without steps (swaps alone, or nothing) comes next."""
        ...


# what the engine's builder passes to build a hook for its settings (None: no hook)
HookFactory = Callable[[EngineConfig, LlamaForCausalLM, KVCache, torch.device], RunnerHook | None]


class ModelRunner:
    def __init__(
        self,
        model: LlamaForCausalLM,
        cache: KVCache,
        device: torch.device,
        hook: RunnerHook | None = None,
    ) -> None:
        self.model = model
        self.cache = cache
        self.device = device
        self.hook = hook
        self.last_stage: StageMode = "off"  # the last iteration's ("reuse": nothing gathered)

    def apply_swaps(self, decision: Iteration) -> None:
        for swap in decision.swaps:
            if swap.direction == "out":
                self.cache.swap_out(swap.blocks)
            else:
                self.cache.swap_in(swap.blocks)

    def batch(self, rows: Rows, stage: StageMode = "off", stage_blocks: int = 0) -> AttentionBatch:
        return AttentionBatch.build(
            rows.starts,
            rows.lengths,
            rows.tables,
            self.cache.block_size,
            self.device,
            stage,
            stage_blocks,
        )

    def forward(self, rows: Rows, batch: AttentionBatch, layers: list[LayerKV]) -> torch.Tensor:
        """One forward pass over the rows on this thread: their logits."""
        if rows.decodes_only:  # one position each
            positions = torch.tensor(rows.starts, device=self.device)
        else:
            spans = [np.arange(s, s + n) for s, n in zip(rows.starts, rows.lengths, strict=True)]
            positions = torch.from_numpy(np.concatenate(spans)).to(self.device)
        input_ids = torch.tensor(rows.ids, dtype=torch.long, device=self.device)
        return self.model(input_ids, positions, batch, layers)

    @torch.inference_mode()
    def execute(
        self,
        decision: Iteration,
        token_ids: Mapping[str, Sequence[int]],
        block_tables: Mapping[str, Sequence[int]],
        params: Mapping[str, SamplingParams],
        generators: Mapping[str, torch.Generator],
    ) -> dict[str, int]:
        """Run the iteration; returns the new token of every step that completes a context."""
        if not decision.steps:  # swaps alone (or nothing): the next decode batch regathers
            if self.hook is not None:
                self.hook.idle()
            self.last_stage = "off"
            self.apply_swaps(decision)
            return {}
        rows = Rows([], [], [], [], [])
        for step in decision.steps:
            rid, start = step.request_id, step.cached
            rows.rids.append(rid)
            rows.starts.append(start)
            rows.lengths.append(step.tokens)
            rows.tables.append(block_tables[rid])
            rows.ids.extend(token_ids[rid][start : start + step.tokens])
        if self.hook is not None:
            logits = self.hook.forward(self, decision, rows)
        else:
            self.apply_swaps(decision)
            self.last_stage = "off"
            logits = self.forward(rows, self.batch(rows), self.cache.layers)
        sampled = [i for i, s in enumerate(decision.steps) if s.samples]
        if not sampled:
            return {}
        if len(sampled) < len(rows.rids):  # a prefill chunk that ends mid-prompt samples nothing
            logits = logits[sampled]
        rids = [rows.rids[i] for i in sampled]
        tokens = sample(logits, [params[r] for r in rids], [generators[r] for r in rids])
        return dict(zip(rids, tokens, strict=True))
