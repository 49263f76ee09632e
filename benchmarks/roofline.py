"""What this machine could do for the engine anchor's request set: its roofline, measured.

Two rates, measured in the run that times the engines, on the same threads: a large square
float32 GEMM (FLOP/s: prefill, and any step with many rows, cannot beat it) and a streaming
read of a tensor far larger than the caches (bytes/s: a decode step reads every weight and
its sequences' KV once, and cannot beat that). `bound_s` turns them into a lower bound on the
request set's wall time: every prompt prefilled first in steps of at most `step_tokens`
tokens, then one decode step per output position with the sequences still running; each
step costs the larger of its FLOPs over the GEMM rate and its bytes over the read rate. No
engine reaches it (attention, sampling, the scheduler and the Python around them all cost
more); a runner's time over it says how far the engine is from what the machine offers.

`product_read_rates` measures what the bound assumes decode gets: the model's decode-sized
products (one activation row per sequence) timed one by one, as the weight bytes they read
per second, through torch's plain `linear`, the engine's row split (`row_split.py`) and its
packed products (`packed.py`), beside the streaming rate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from kairos.andes.engine.config import ModelConfig
from kairos.andes.engine.cpu import row_split
from kairos.andes.engine.cpu.packed import PackedWeights, cpu_products
from kairos.andes.engine.cpu.split_rows import best_seconds
from kairos.andes.engine.model import DecoderLayer, LlamaForCausalLM

FLOAT = 4  # bytes per float32


def gemm_flops(n: int = 2048, reps: int = 5) -> float:
    """FLOP/s of one n x n x n float32 GEMM, best of `reps`."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2.0 * n**3 / best_seconds(lambda: torch.mm(a, b), reps)


def read_bytes_per_s(mib: int = 512, reps: int = 5) -> float:
    """Bytes/s of summing a `mib`-MiB float32 tensor (a read of every element), best of `reps`."""
    x = torch.ones(mib * 2**20 // FLOAT)
    return x.numel() * FLOAT / best_seconds(lambda: x.sum(), reps)


def _linear_params(cfg: ModelConfig) -> tuple[int, int]:
    """(weights a token passes through in the layers, the vocabulary projection's)."""
    h, kv = cfg.hidden_size, cfg.num_key_value_heads * cfg.head_dim
    q = cfg.num_attention_heads * cfg.head_dim
    per_layer = h * (q + 2 * kv) + q * h + 3 * h * cfg.intermediate_size
    return per_layer * cfg.num_hidden_layers, h * cfg.vocab_size


def bound_s(
    cfg: ModelConfig,
    prompts: Sequence[int],
    outs: Sequence[int],
    flops: float,
    read: float,
    step_tokens: int = 4096,
) -> float:
    """The lower bound of the module docstring, for prompts and outputs of these lengths."""
    layers, vocab = _linear_params(cfg)
    weights = (layers + vocab) * FLOAT
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * FLOAT
    attn_per_pair = 4 * cfg.num_hidden_layers * cfg.num_attention_heads * cfg.head_dim
    total, tokens, pairs, seqs = 0.0, 0, 0, 0
    for p in prompts:  # prefill, packed into steps
        if tokens + p > step_tokens and tokens:
            total += max((2 * layers * tokens + 2 * vocab * seqs + attn_per_pair * pairs) / flops,
                         weights / read)  # fmt: skip
            tokens = pairs = seqs = 0
        tokens, pairs, seqs = tokens + p, pairs + p * (p + 1) // 2, seqs + 1
    total += max((2 * layers * tokens + 2 * vocab * seqs + attn_per_pair * pairs) / flops,
                 weights / read)  # fmt: skip
    for s in range(1, max(outs)):  # decode: one token per sequence still running
        ctx = [p + s for p, n in zip(prompts, outs, strict=True) if n > s]
        step_flops = len(ctx) * 2 * (layers + vocab) + attn_per_pair * sum(ctx)
        step_bytes = weights + kv_per_token * sum(ctx)
        total += max(step_flops / flops, step_bytes / read)
    return total


def _product_s(
    linear: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    w: torch.Tensor,
    reps: int,
) -> float:
    return best_seconds(lambda: linear(x, w), reps)


def product_read_rates(model: LlamaForCausalLM, rows: int, reps: int = 20) -> dict[str, float]:
    """Weight bytes read per second by the decode products at `rows` activation rows, summed
    over one layer's products and the vocabulary projection: plain, row-split and packed."""
    layer = model.model.layers[0]
    assert isinstance(layer, DecoderLayer)
    attn, mlp = layer.self_attn, layer.mlp
    weights = [
        torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),
        attn.o_proj.weight,
        torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
        mlp.down_proj.weight,
        model.lm_head.weight,
    ]
    read = sum(w.numel() * FLOAT for w in weights)
    xs = [torch.randn(rows, w.shape[1]) for w in weights]
    packed = cpu_products(PackedWeights(weights), split=False).linear
    out: dict[str, float] = {}
    for name, linear in (("plain", F.linear), ("split", row_split.linear), ("packed", packed)):
        with torch.inference_mode():
            t = sum(_product_s(linear, x, w, reps) for w, x in zip(weights, xs, strict=True))
        out[name] = read / t
    return out
