"""vLLM's own scheduler, driven without a model, the way vLLM's scheduler tests drive it.

`make_scheduler` builds a `VllmConfig` from a local checkpoint's config (no download, no
weights read) and a one-group `KVCacheConfig` of `num_blocks` blocks, and returns vLLM's
`Scheduler` or a subclass. `step` runs one `schedule()` and feeds `update_from_output()` a
`ModelRunnerOutput` whose sampled token is a fixed function of the request and position, so
a request resumed after a recompute preemption must produce the same tokens as one never
preempted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

BLOCK = 16
EOS = 2


def make_scheduler(
    cls: type[Scheduler],
    checkpoint: Path,
    num_blocks: int,
    *,
    max_num_seqs: int = 8,
    max_num_batched_tokens: int = 2048,
    additional_config: dict[str, Any] | None = None,
    async_scheduling: bool = False,
) -> Any:
    sched_cfg = SchedulerConfig(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=1024,
        enable_chunked_prefill=True,
        async_scheduling=False,
        is_encoder_decoder=False,
    )
    model_cfg = ModelConfig(
        model=str(checkpoint), dtype="float32", seed=0, skip_tokenizer_init=True
    )
    cache_cfg = CacheConfig(block_size=BLOCK, enable_prefix_caching=False)
    vllm_cfg = VllmConfig(
        scheduler_config=sched_cfg,
        model_config=model_cfg,
        cache_config=cache_cfg,
        additional_config=additional_config or {},
    )
    # set after VllmConfig resolved it (on CPU it may turn async scheduling off by itself)
    vllm_cfg.scheduler_config.async_scheduling = async_scheduling
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kv_cfg = KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)],
    )
    cache_cfg.num_gpu_blocks = num_blocks
    return cls(
        vllm_config=vllm_cfg,
        kv_cache_config=kv_cfg,
        structured_output_manager=StructuredOutputManager(vllm_cfg),
        block_size=BLOCK,
        log_stats=False,
    )


def request(rid: str, prompt_len: int, max_tokens: int, arrival: float, **xargs: Any) -> Request:
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, extra_args=xargs or None)
    prompt = [3 + (sum(map(ord, rid)) + i) % 250 for i in range(prompt_len)]
    return Request(rid, prompt, params, None, arrival_time=arrival)


def token(rid: str, position: int) -> int:
    """The 'model': a token fixed by request and position, never EOS."""
    return 3 + (sum(map(ord, rid)) * 31 + position * 7) % 250


def model_output(sched: Any, out: SchedulerOutput) -> ModelRunnerOutput:
    """What the model would return for `out`: one `token` per request whose context the step
    completes (schedule() already advanced `num_computed_tokens`), none for a partial prefill."""
    ids = list(out.num_scheduled_tokens)
    sampled = []
    for rid in ids:
        r = sched.requests[rid]
        sampled.append(
            [token(rid, r.num_output_tokens)] if r.num_computed_tokens >= r.num_tokens else []
        )
    return ModelRunnerOutput(
        req_ids=ids,
        req_id_to_index={rid: i for i, rid in enumerate(ids)},
        sampled_token_ids=sampled,
    )


@dataclass
class Trace:
    """What one engine did: per step, tokens scheduled per request id and who was preempted;
    the tokens each request produced."""

    steps: list[dict[str, int]] = field(default_factory=list)
    preempted: list[frozenset[str]] = field(default_factory=list)
    outputs: dict[str, list[int]] = field(default_factory=dict)


def step(
    sched: Any, trace: Trace | None = None, between: Callable[[], None] | None = None
) -> SchedulerOutput:
    """One `schedule()` and its `update_from_output()`; `between` runs in between (the
    model's time: a test advances its clock there)."""
    out: SchedulerOutput = sched.schedule()
    if between is not None:
        between()
    mro = model_output(sched, out)
    reqs = {rid: sched.requests[rid] for rid in out.num_scheduled_tokens}
    sched.update_from_output(out, mro)
    if trace is not None:
        trace.steps.append(dict(out.num_scheduled_tokens))
        trace.preempted.append(frozenset(out.preempted_req_ids))
        for rid, r in reqs.items():
            trace.outputs[rid] = list(r.output_token_ids)
    return out


def held_blocks(sched: Any) -> dict[str, int]:
    """KV blocks each request holds in vLLM's KV cache manager (one group)."""
    return {
        rid: len(sched.kv_cache_manager.get_block_ids(rid)[0])
        for rid in sched.requests
        if sched.kv_cache_manager.get_block_ids(rid)[0]
    }
