"""Small float64 models and engines for correctness tests (float64 so no near-tie flips)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import pytest
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.config import EngineConfig, ModelConfig, SplitProducts
from kairos.andes.engine.cpu import CpuHook, build_engine
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.weights import random_model
from kairos.andes.latency import LinearProfile
from kairos.andes.policy import Policy

TINY = ModelConfig(
    vocab_size=259,
    hidden_size=64,
    intermediate_size=160,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=1024,
    bos_token_id=256,
    eos_token_id=257,
)


def tiny_model(seed: int = 0, cfg: ModelConfig = TINY, scale: float = 8.0) -> LlamaForCausalLM:
    """Random weights scaled up so greedy choices are decisive, not near-uniform."""
    model = random_model(cfg, seed=seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.endswith("norm.weight"):
                p.mul_(scale)
    return model.to(torch.float64)


def flat_profile(kv_tokens: int, swap_tokens: int, block_size: int = 16) -> LinearProfile:
    return LinearProfile(
        name="test",
        decode_coef=(0.01, 0.0005, 0.0),
        prefill_coef=(0.005, 1e-5, 0.0),
        swap_s_per_token=1e-6,
        kv_capacity=kv_tokens,
        swap_capacity=swap_tokens,
        block_size=block_size,
    )


def make_engine(
    *,
    blocks: int = 64,
    cpu_blocks: int = 64,
    policy: str = "fcfs",
    policy_obj: Policy | None = None,
    max_model_len: int = 512,
    seed: int = 0,
    stage_decodes: bool | None = None,
    decode_lanes: int = 0,
    adaptive_lanes: bool = True,
    dtype: Literal["float64", "float32"] = "float64",
    split_products: SplitProducts = "measured",
    adaptive_threads: bool = False,
    packed_products: bool = True,
    split_rows: int | None = 64,
) -> LLMEngine:
    """`adaptive_threads` is off unless asked, and the split's row crossover fixed (None
    measures it): the tests' counts must not follow the timings of a shared machine."""
    cfg = EngineConfig(
        dtype=dtype,
        device="cpu",
        num_gpu_blocks=blocks,
        num_cpu_blocks=cpu_blocks,
        max_model_len=max_model_len,
        policy=policy,
        max_num_seqs=16,
        max_num_batched_tokens=2048,
        seed=seed,
        stage_decodes=stage_decodes,
        decode_lanes=decode_lanes,
        adaptive_lanes=adaptive_lanes,
        split_products=split_products,
        adaptive_threads=adaptive_threads,
        packed_products=packed_products,
        split_rows=split_rows,
    )
    return build_engine(
        cfg,
        model=tiny_model(seed).to(getattr(torch, dtype)),
        latency=flat_profile(blocks * 16, cpu_blocks * 16),
        policy=policy_obj,
    )


def hook_of(engine: LLMEngine) -> CpuHook:
    """The engine's CPU hook (its staging, lanes and split-product counters and choices)."""
    hook = engine.runner.hook
    assert isinstance(hook, CpuHook)
    return hook


def drive(
    engine: LLMEngine,
    ps: list[list[int]],
    params: list[SamplingParams],
    qoe: QoESpec | None = None,
) -> list[list[int]]:
    """Submit every prompt at once, step until all finish, and return each one's tokens in
    submission order; every KV block is back in the pool at the end."""
    ids = [f"r{i}" for i in range(len(ps))]
    for rid, p, sp in zip(ids, ps, params, strict=True):
        engine.add_request(rid, p, sp, qoe or QoESpec(ttft_s=1.0, tokens_per_s=5.0))
    out: dict[str, list[int]] = {rid: [] for rid in ids}
    while engine.has_unfinished:
        for ev in engine.step():
            if ev.token_id is not None:
                out[ev.request_id].append(ev.token_id)
    assert engine.scheduler.blocks.gpu.free == engine.scheduler.blocks.gpu.num_blocks
    return [out[rid] for rid in ids]


@pytest.fixture
def two_threads() -> Iterator[None]:
    """Two torch intra-op threads on this thread for the test."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def engine_factory():  # type: ignore[no-untyped-def]
    return make_engine
