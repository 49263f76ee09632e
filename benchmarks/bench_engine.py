"""Engine benchmarks: decode throughput against a plain dense-KV loop, and scheduler overhead.

1. Throughput. The built-in model generates N greedy tokens for B prompts of P tokens, once
   through our engine (paged KV cache, continuous batching, the scheduler and policy asked
   every iteration) and once through a plain loop over the same weights that keeps a dense
   `[B, kv_heads, P+N, head_dim]` cache per layer and no scheduler at all: the simplest
   correct way to batch-decode. Tokens/s for each, alternated and best-of-R to damp noise on a
   shared machine; the ratio is what we report.
2. Scheduler overhead: the share of the engine's step time spent deciding and recording
   (scheduler + policy) rather than in the model runner, per policy.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from kairos.andes.engine.api import SamplingParams
from kairos.andes.engine.config import EngineConfig
from kairos.andes.engine.engine import LLMEngine
from kairos.andes.engine.model import LlamaForCausalLM
from kairos.andes.engine.weights import random_model
from kairos.andes.latency import LinearProfile
from kairos.report import print_table, write_result


def dense_greedy(model: LlamaForCausalLM, prompts: torch.Tensor, steps: int) -> torch.Tensor:
    """Batch greedy decoding with a preallocated dense KV cache (the baseline)."""
    cfg = model.config
    b, p = prompts.shape
    total = p + steps
    caches = [
        (
            torch.zeros(b, cfg.num_key_value_heads, total, cfg.head_dim),
            torch.zeros(b, cfg.num_key_value_heads, total, cfg.head_dim),
        )
        for _ in range(cfg.num_hidden_layers)
    ]
    out = torch.empty(b, steps, dtype=torch.long)
    ids, start = prompts, 0
    with torch.inference_mode():
        for step in range(steps):
            n = ids.shape[1]
            pos = torch.arange(start, start + n).repeat(b)
            x = model.model.embed_tokens(ids).reshape(b * n, -1)
            for layer, (kc, vc) in zip(model.model.layers, caches, strict=True):
                att = layer.self_attn
                h = layer.input_layernorm(x)
                q = model.rope(att.q_proj(h).view(b * n, att.heads, att.head_dim), pos)
                k = model.rope(att.k_proj(h).view(b * n, att.kv_heads, att.head_dim), pos)
                v = att.v_proj(h).view(b * n, att.kv_heads, att.head_dim)
                kc[:, :, start : start + n] = k.view(b, n, att.kv_heads, -1).transpose(1, 2)
                vc[:, :, start : start + n] = v.view(b, n, att.kv_heads, -1).transpose(1, 2)
                o = F.scaled_dot_product_attention(
                    q.view(b, n, att.heads, -1).transpose(1, 2),
                    kc[:, :, : start + n],
                    vc[:, :, : start + n],
                    is_causal=n > 1,
                    enable_gqa=True,
                )
                x = x + att.o_proj(o.transpose(1, 2).reshape(b * n, -1))
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            last = model.model.norm(x.view(b, n, -1)[:, -1])
            nxt = model.lm_head(last).argmax(-1)
            out[:, step] = nxt
            start += n
            ids = nxt[:, None]
    return out


def _fixed_profile(blocks: int) -> LinearProfile:
    return LinearProfile(
        name="bench",
        decode_coef=(0.005, 0.0002, 0.0),
        prefill_coef=(0.005, 2e-5, 0.0),
        swap_s_per_token=1e-6,
        kv_capacity=blocks * 16,
        swap_capacity=0,
    )


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    prompt_len, steps, reps = (64, 32, 2) if quick else (64, 128, 3)
    model = random_model(seed=0)
    rows: list[dict[str, Any]] = []
    gen = torch.Generator().manual_seed(0)
    for policy in ("fcfs", "andes"):
        for batch in (1, 8, 32):
            prompts = torch.randint(0, 256, (batch, prompt_len), generator=gen)
            blocks = batch * ((prompt_len + steps) // 16 + 2) + 8
            best_ours = best_dense = float("inf")
            share = 0.0
            same = 0.0
            for _ in range(reps):
                engine = LLMEngine(
                    EngineConfig(
                        num_gpu_blocks=blocks,
                        num_cpu_blocks=0,
                        max_model_len=min(blocks * 16, 4096),
                        max_num_seqs=64,
                        policy=policy,
                    ),
                    model=model,
                    latency=_fixed_profile(blocks),
                )
                t0 = time.perf_counter()
                ours = engine.generate(
                    prompts.tolist(),
                    SamplingParams(max_tokens=steps, temperature=0, ignore_eos=True),
                )
                t_ours = time.perf_counter() - t0
                t0 = time.perf_counter()
                dense = dense_greedy(model, prompts, steps)
                t_dense = time.perf_counter() - t0
                if t_ours < best_ours:
                    best_ours = t_ours
                    c = engine.counters
                    share = c.schedule_s / (c.schedule_s + c.execute_s)
                best_dense = min(best_dense, t_dense)
                same = float((torch.tensor(ours) == dense).float().mean())
            tokens = batch * steps
            rows.append(
                {
                    "policy": policy,
                    "batch": batch,
                    "ours_tok_s": tokens / best_ours,
                    "dense_tok_s": tokens / best_dense,
                    "ours_over_dense": best_dense / best_ours,
                    "scheduler_share": share,
                    "same_tokens": same,
                }
            )
    print_table(rows, title=f"engine decode throughput (prompt {prompt_len}, {steps} new tokens)")
    write_result(out_dir, "engine_throughput", config={"quick": quick}, rows=rows)
    return rows
