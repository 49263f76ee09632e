"""`TinyDecoder`: a small random-weight transformer LM with a KV cache (GPT / BART stand-in).

Autoregressive models do work proportional to the number of tokens they produce, so their
solo latency varies with the request (spec 6.2). Each request asks for exactly `n_new` greedy
tokens after its prompt; a batch is padded like the early-exit CNN: it decodes max(n_new) steps
and each member keeps its first `n_new` tokens. Prompts of different lengths are left-padded
with masked positions and per-sequence position ids, so a batched request decodes exactly the
tokens it would decode alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import BaseModel, Field, create_model
from torch import nn
from torch.nn import functional as F

from kairos.orloj.runtime.served import STRICT, ModelKind, ServedModel


class _Layer(nn.Module):
    """Pre-LayerNorm attention + MLP block that reads and writes a preallocated KV cache."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(
        self, x: torch.Tensor, cache: torch.Tensor, start: int, mask: torch.Tensor
    ) -> torch.Tensor:
        """x: [k, n, d] at cache positions start..start+n; cache: [2, k, h, max_len, dh]."""
        k, n, d = x.shape
        q, key, val = (
            self.qkv(self.ln1(x)).view(k, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        )
        cache[0, :, :, start : start + n] = key
        cache[1, :, :, start : start + n] = val
        end = start + n
        att = F.scaled_dot_product_attention(
            q, cache[0, :, :, :end], cache[1, :, :, :end], attn_mask=mask
        )
        x = x + self.proj(att.transpose(1, 2).reshape(k, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class _DecoderNet(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.layers = nn.ModuleList(_Layer(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)


class TinyDecoder(ServedModel):
    """Greedy decoding of exactly `n_new` tokens per request; `input = {tokens, n_new}`."""

    kind: ModelKind = "decoder"
    class_field = "n_new"

    def __init__(
        self,
        vocab: int = 512,
        d_model: int = 256,
        heads: int = 4,
        layers: int = 2,
        max_prompt: int = 32,
        max_new: int = 96,
        new_classes: Sequence[int] = (4, 16, 32, 48),
        prompt_len: int = 8,
        seed: int = 0,
        device: str = "cpu",
    ) -> None:
        if not 2 <= layers <= 4 or d_model % heads:
            raise ValueError("TinyDecoder needs 2-4 layers and heads dividing d_model")
        if not all(1 <= n <= max_new for n in new_classes) or not 1 <= prompt_len <= max_prompt:
            raise ValueError("new_classes must lie in [1, max_new], prompt_len in [1, max_prompt]")
        torch.manual_seed(seed)
        self.max_len = max_prompt + max_new
        super().__init__(_DecoderNet(vocab, d_model, heads, layers, self.max_len), device)
        self.net: _DecoderNet = self.module  # type: ignore[assignment]
        self.vocab, self.d, self.h = vocab, d_model, heads
        self.new_classes, self.prompt_len = tuple(new_classes), prompt_len
        token = Annotated[int, Field(ge=0, lt=vocab)]
        self.input_schema = create_model(
            "DecoderInput",
            __config__=STRICT,
            tokens=(list[token], Field(min_length=1, max_length=max_prompt)),
            n_new=(int, Field(ge=1, le=max_new, description="tokens to generate")),
        )

    def classes(self) -> dict[str, BaseModel]:
        prompt = list(range(1, self.prompt_len + 1))
        return {f"new{n}": self.input_schema(tokens=prompt, n_new=n) for n in self.new_classes}

    def class_of(self, x: BaseModel) -> str:
        n_new = int(x.n_new)  # type: ignore[attr-defined]
        return f"new{min(self.new_classes, key=lambda c: (abs(c - n_new), c))}"

    def default_apps(self) -> dict[str, tuple[str, ...]]:
        c = [f"new{n}" for n in self.new_classes]
        if len(c) < 3:
            return {f"app{i}": (k,) for i, k in enumerate(c)}
        return {"chat": (c[0],), "reply": tuple(c[1:-1]), "story": (c[-1],)}

    def random_input(self, cls: str, rng: np.random.Generator) -> dict[str, Any]:
        n_new = int(cls.removeprefix("new"))
        tokens = rng.integers(0, self.vocab, size=self.prompt_len).tolist()
        return {"tokens": tokens, "n_new": n_new}

    def _forward(self, xs: Sequence[Any]) -> list[dict[str, Any]]:
        k = len(xs)
        lens = [len(x.tokens) for x in xs]
        width, steps = max(lens), max(x.n_new for x in xs)
        dev = self.device
        ids = torch.zeros(k, width, dtype=torch.long)
        valid = torch.zeros(k, width + steps, dtype=torch.bool)
        for i, x in enumerate(xs):  # left padding: every prompt ends at column width-1
            ids[i, width - lens[i] :] = torch.tensor(x.tokens)
            valid[i, width - lens[i] :] = True
        ids, valid = ids.to(dev), valid.to(dev)
        pos = (valid[:, :width].cumsum(1) - 1).clamp(min=0)
        cache = torch.zeros(len(self.net.layers), 2, k, self.h, width + steps, self.d // self.h)
        cache = cache.to(dev)
        causal = torch.ones(width, width, dtype=torch.bool, device=dev).tril()
        # a pad query sees itself only (never read; keeps its softmax finite)
        mask = (causal & valid[:, None, :width]) | torch.eye(width, dtype=torch.bool, device=dev)
        logits = self._step(ids, pos, cache, 0, mask[:, None])
        out = [logits.argmax(-1)]
        for t in range(1, steps):
            pos = pos[:, -1:] + 1
            step_mask = valid[:, None, None, : width + t]
            logits = self._step(out[-1][:, None], pos, cache, width + t - 1, step_mask)
            out.append(logits.argmax(-1))
        tokens = torch.stack(out, dim=1).tolist()
        return [{"tokens": tokens[i][: x.n_new]} for i, x in enumerate(xs)]

    def _step(
        self,
        ids: torch.Tensor,
        pos: torch.Tensor,
        cache: torch.Tensor,
        start: int,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """Run positions start.. of every sequence; the logits of each one's last position."""
        h = self.net.tok(ids) + self.net.pos(pos)
        for layer, c in zip(self.net.layers, cache, strict=True):
            h = layer(h, c, start, mask)
        return self.net.head(self.net.ln(h[:, -1]))
