"""A Llama-architecture decoder: RMSNorm, rotary positions (rope.py), grouped-query attention,
SwiGLU.

Parameter names follow Hugging Face's `LlamaForCausalLM` / `Qwen2ForCausalLM` so a checkpoint's
safetensors load by name. The forward pass takes one flat batch of tokens with their absolute
positions and an `AttentionBatch` saying where their keys and values live. Its matrix
products go through `Products` (plain torch ops unless a runner hook puts in others that
compute the same, as engine/cpu/row_split.py does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from kairos.andes.engine.attention import AttentionBatch, paged_attention
from kairos.andes.engine.config import ModelConfig
from kairos.andes.engine.kv_cache import LayerKV
from kairos.andes.engine.rope import RotaryEmbedding, apply_rope


def _linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    return F.linear(x, weight, bias)


def _linear_add(residual: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`residual + F.linear(x, weight)`: the residual add riding on the product."""
    return torch.addmm(residual, x, weight.t())


@dataclass(frozen=True)
class Products:
    """`linear(x, weight, bias=None)` as `F.linear`, and `linear_add(residual, x, weight)`."""

    linear: Callable[..., torch.Tensor] = _linear
    linear_add: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] = _linear_add

    def project(self, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x, layer.weight, layer.bias)


PLAIN = Products()


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype in (torch.float32, torch.float64):  # one fused op, same arithmetic
            return nn.functional.rms_norm(x, self.weight.shape, self.weight, self.eps)
        h = x.float()  # half types normalise in float32, as Hugging Face does
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(cfg.hidden_size, self.heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=False)
        self._qkv: tuple[torch.Tensor, torch.Tensor | None] | None = None
        self.products = PLAIN
        self._split = [self.heads * self.head_dim, *[self.kv_heads * self.head_dim] * 2]

    def fuse(self) -> None:
        """One q|k|v matmul instead of three (as vLLM's QKVParallelLinear); the separate
        parameters become views of the fused tensor, so state dicts are unchanged."""
        projs = (self.q_proj, self.k_proj, self.v_proj)
        weight = torch.cat([p.weight.data for p in projs])
        bias = torch.cat([p.bias.data for p in projs]) if self.q_proj.bias is not None else None
        for i, (p, part) in enumerate(zip(projs, weight.split(self._split), strict=True)):
            p.weight.data = part
            if bias is not None:
                p.bias.data = bias.split(self._split)[i]
        self._qkv = (weight, bias)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        batch: AttentionBatch,
        kv: LayerKV | None,
        residual: torch.Tensor,
    ) -> torch.Tensor:
        """`residual + attention(x)`: the add rides on the output projection (one addmm)."""
        t = x.shape[0]
        if self._qkv is not None:  # rotate q and k together: one set of elementwise ops
            qkv = self.products.linear(x, *self._qkv)
            qk_dim = (self.heads + self.kv_heads) * self.head_dim
            qk = apply_rope(qkv[:, :qk_dim].view(t, -1, self.head_dim), *rope)
            q, k = qk[:, : self.heads], qk[:, self.heads :]
            v = qkv[:, qk_dim:].view(t, self.kv_heads, self.head_dim)
        else:
            q = apply_rope(
                self.products.project(self.q_proj, x).view(t, self.heads, self.head_dim), *rope
            )
            k = apply_rope(
                self.products.project(self.k_proj, x).view(t, self.kv_heads, self.head_dim), *rope
            )
            v = self.products.project(self.v_proj, x).view(t, self.kv_heads, self.head_dim)
        out = paged_attention(q, k, v, batch, kv).reshape(t, self.heads * self.head_dim)
        return self.products.linear_add(residual, out, self.o_proj.weight)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self._gate_up: torch.Tensor | None = None
        self.products = PLAIN

    def fuse(self) -> None:
        """One gate|up matmul (vLLM's MergedColumnParallelLinear); parameters become views."""
        weight = torch.cat([self.gate_proj.weight.data, self.up_proj.weight.data])
        self.gate_proj.weight.data, self.up_proj.weight.data = weight.chunk(2)
        self._gate_up = weight

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """`residual + mlp(x)`, the add riding on the down projection."""
        if self._gate_up is None:
            act = nn.functional.silu(
                self.products.project(self.gate_proj, x)
            ) * self.products.project(self.up_proj, x)
        else:
            gate, up = self.products.linear(x, self._gate_up).chunk(2, dim=-1)
            act = nn.functional.silu(gate) * up
        return self.products.linear_add(residual, act, self.down_proj.weight)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        batch: AttentionBatch,
        kv: LayerKV | None,
    ) -> torch.Tensor:
        x = self.self_attn(self.input_layernorm(x), rope, batch, kv, residual=x)
        return self.mlp(self.post_attention_layernorm(x), residual=x)


class LlamaBody(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = LlamaBody(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.products = PLAIN
        self.rope = RotaryEmbedding(
            cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings, cfg.rope_scaling
        )

    def use_products(self, products: Products) -> LlamaForCausalLM:
        """Every product of the model through `products` from now on."""
        self.products = products
        for layer in self.model.layers:
            assert isinstance(layer, DecoderLayer)
            layer.self_attn.products = layer.mlp.products = products
        return self

    def fuse(self) -> LlamaForCausalLM:
        """Fuse projections for serving (call after the weights and dtype are final)."""
        for layer in self.model.layers:
            assert isinstance(layer, DecoderLayer)
            layer.self_attn.fuse()
            layer.mlp.fuse()
        return self

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        batch: AttentionBatch,
        kv_cache: list[LayerKV] | None = None,
    ) -> torch.Tensor:
        """Logits at each sequence's last scheduled token: [S, vocab]."""
        return self.logits(self.hidden(input_ids, positions, batch, kv_cache))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The vocabulary projection of final-norm rows: [S, vocab]."""
        return self.products.project(self.lm_head, hidden)

    def hidden(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        batch: AttentionBatch,
        kv_cache: list[LayerKV] | None = None,
    ) -> torch.Tensor:
        """The final norm's output at each sequence's last scheduled token: [S, hidden].
        Apart from `forward` so decode lanes (lanes.py) can run the layers on parts of a
        batch and the vocabulary projection, one large GEMM that threads well, on all rows."""
        x = self.model.embed_tokens(input_ids)
        rope = self.rope.cos_sin(positions, x.dtype)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, rope, batch, kv_cache[i] if kv_cache else None)
        return self.model.norm(x[batch.last_index])

    @torch.inference_mode()
    def dense_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Every position's logits for one sequence with plain causal attention, no cache."""
        n = input_ids.shape[0]
        batch = AttentionBatch.dense(n, input_ids.device)
        batch.last_index = torch.arange(n, device=input_ids.device)
        return self.forward(input_ids, torch.arange(n, device=input_ids.device), batch)
