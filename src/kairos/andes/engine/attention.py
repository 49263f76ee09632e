"""Attention over a paged KV cache, in plain torch.

Every scheduled token of an iteration sits in one flat batch (prefills, chunks and decodes
together, sequence after sequence, as in vLLM), so the linear layers run once over all of
them. Attention then writes the new keys and values into their cache slots and reads each
sequence's whole context back through its block table:

- decodes (one new token each) are batched: their contexts are gathered, padded to the
  longest among them and masked, and attended with two batched matmuls per KV head group.
  The cache is laid out `[kv_heads, blocks, block_size, head_dim]`, so one `index_select`
  gives keys already shaped `[kv_heads, sequences, context, head_dim]` with no transpose
  copy, and the `heads / kv_heads` queries sharing a KV head form one small matrix: a GEMM
  instead of `scaled_dot_product_attention`'s per-head loop over a one-row query, which on a
  CPU took twice as long for the same decode (see benchmarks/bench_engine.py);
- prefills and prefill chunks run one call each, without padding, so a batch of prompts costs
  each prompt's own attention (what the latency model and the simulator assume), neither
  `batch x longest` nor that of one prompt of their summed length (the loop is the CPU
  stand-in for a variable-length attention kernel). A fresh prompt (nothing cached before
  it) attends to its own new keys and values as computed, without reading them back from
  the cache: two gathers per prompt and layer fewer; chunks and recomputes after a cached
  part gather their context through the block table.

Staging. A decode batch gathers every context every layer, although from one decode iteration
to the next only one token per sequence is new. When an iteration is all decodes of the same
sequences as the last one (no prefill, no swap in between), the contexts gathered last time
(`LayerKV.staged_k/v`, with a few blocks of headroom) get the new token written in place and
are attended again; any other iteration gathers afresh ("fill") or drops them ("off"). While
reusing, new tokens go to the staged rows only; the runner copies them into their paged slots
in one go at the start of the next iteration that is not a reuse, before any swap or gather
reads the paged cache (`DecodeStage.flush`, staging.py). A slot freed meanwhile (its request
finished) may receive a stale token then, which is harmless: its next owner writes a slot
before any query reads it. Staging holds the running decode batch's KV a second time, so it
is meant for host memory (the engine enables it on CPU).

`AttentionBatch.dense` gives the same computation without a cache (one sequence, causal), the
reference the paged path is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

from kairos.andes.engine.kv_cache import LayerKV

StageMode = Literal["off", "fill", "reuse"]


@dataclass
class PrefillSpan:
    """One sequence computing several tokens: its queries and the context they attend to."""

    first: int  # index of its first new token in the flat batch
    length: int  # new tokens
    start: int  # tokens of it already cached (0 for a fresh prompt)
    blocks: torch.Tensor | None  # block ids covering start + length tokens; None: dense
    mask: torch.Tensor | None  # [length, start + length]; None: plain causal (start == 0)


@dataclass
class AttentionBatch:
    """Where an iteration's tokens go in the cache and what each sequence attends to."""

    slot_mapping: torch.Tensor | None  # [T] cache slot of every new token; None = no cache
    last_index: torch.Tensor  # [S] flat index of each sequence's last token
    decode_index: torch.Tensor | None = None  # [D] flat indices of the one-token sequences
    decode_tables: torch.Tensor | None = None  # [D, max_blocks], padded with block 0 (gather)
    decode_bias: torch.Tensor | None = None  # [D, max_blocks * block_size]: 0 or -inf
    stage: StageMode = "off"
    stage_slots: torch.Tensor | None = None  # reuse: [D] flat row * capacity + position
    all_decode: bool = False  # every token is a decode: outputs need no scatter
    head_bias: torch.Tensor | None = None  # decode_bias per KV head (`_head_bias`), lazily
    prefills: list[PrefillSpan] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        starts: Sequence[int],
        lengths: Sequence[int],
        block_tables: Sequence[Sequence[int]],
        block_size: int,
        device: torch.device,
        stage: StageMode = "off",
        stage_blocks: int = 0,
    ) -> AttentionBatch:
        """`starts[s]`: tokens of sequence s already in the cache; `lengths[s]`: new tokens.
        `stage` (all-decode batches only): "fill" gathers `stage_blocks` blocks per sequence
        (its table padded) to keep; "reuse" gathers nothing and writes each new token into
        the staged rows, `stage_blocks` blocks wide."""
        if all(n == 1 for n in lengths):
            return cls._decodes(starts, block_tables, block_size, device, stage, stage_blocks)
        assert stage == "off", "staging is for all-decode batches"
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        slots: list[int] = []
        dec_rows: list[int] = []
        dec_starts: list[int] = []
        dec_tables: list[Sequence[int]] = []
        prefills: list[PrefillSpan] = []
        for first, st, ln, blocks in zip(firsts, starts, lengths, block_tables, strict=True):
            if ln == 1:
                slots.append(blocks[st // block_size] * block_size + st % block_size)
                dec_rows.append(int(first))
                dec_starts.append(st)
                dec_tables.append(blocks)
                continue
            used = list(blocks[: -(-(st + ln) // block_size)])  # later chunks' blocks unused
            pos = np.arange(st, st + ln)
            slots.extend(
                (np.asarray(used)[pos // block_size] * block_size + pos % block_size).tolist()
            )
            mask = None
            if st:
                k = torch.arange(st + ln)
                mask = (k[None, :] <= (st + torch.arange(ln))[:, None]).to(device)
            prefills.append(
                PrefillSpan(
                    int(first), ln, st, torch.tensor(used, dtype=torch.long, device=device), mask
                )
            )
        batch = cls(
            slot_mapping=torch.tensor(slots, dtype=torch.long, device=device),
            last_index=torch.from_numpy(firsts + np.asarray(lengths) - 1).to(device),
            prefills=prefills,
        )
        if dec_rows:
            batch.decode_index = torch.tensor(dec_rows, dtype=torch.long, device=device)
            batch.decode_bias = _decode_bias(dec_starts, block_size, device)
            batch.decode_tables = _decode_tables(dec_starts, dec_tables, block_size, 0, device)
        return batch

    @classmethod
    def _decodes(
        cls,
        starts: Sequence[int],
        block_tables: Sequence[Sequence[int]],
        block_size: int,
        device: torch.device,
        stage: StageMode,
        stage_blocks: int,
    ) -> AttentionBatch:
        """`build` for the common iteration, one new token per sequence, with few tensor ops:
        it runs every iteration, and at small batches its overhead is a visible share."""
        bs = block_size
        rows = torch.arange(len(starts), device=device)
        batch = cls(
            slot_mapping=torch.tensor(
                [t[p // bs] * bs + p % bs for p, t in zip(starts, block_tables, strict=True)],
                device=device,
            ),
            last_index=rows,
            decode_index=rows,
            decode_bias=_decode_bias(starts, bs, device),
            all_decode=True,
            stage=stage,
        )
        if stage == "reuse":  # nothing to gather
            cap = stage_blocks * bs
            batch.stage_slots = torch.tensor(
                [i * cap + p for i, p in enumerate(starts)], device=device
            )
        else:
            batch.decode_tables = _decode_tables(starts, block_tables, bs, stage_blocks, device)
        return batch

    @classmethod
    def dense(cls, length: int, device: torch.device, sequences: int = 1) -> AttentionBatch:
        """`sequences` back-to-back sequences of `length` tokens each, no cache: each attends
        causally to itself (training runs several windows through one pass this way)."""
        return cls(
            slot_mapping=None,
            last_index=torch.arange(1, sequences + 1, device=device) * length - 1,
            prefills=[PrefillSpan(i * length, length, 0, None, None) for i in range(sequences)],
        )


def _decode_bias(starts: Sequence[int], block_size: int, device: torch.device) -> torch.Tensor:
    """[D, width * block_size]: 0 up to each decode's new token, -inf past it."""
    width = max(starts) // block_size + 1
    hidden = np.arange(width * block_size)[None, :] > np.asarray(starts)[:, None]
    return torch.from_numpy(np.where(hidden, -np.inf, 0.0).astype(np.float32)).to(device)


def _decode_tables(
    starts: Sequence[int],
    block_tables: Sequence[Sequence[int]],
    block_size: int,
    min_blocks: int,
    device: torch.device,
) -> torch.Tensor:
    """[D, max(width, min_blocks)] block ids each decode attends to, padded with block 0."""
    width = max(starts) // block_size + 1
    table = np.zeros((len(starts), max(width, min_blocks)), dtype=np.int64)
    for i, (p, t) in enumerate(zip(starts, block_tables, strict=True)):
        table[i, : p // block_size + 1] = t[: p // block_size + 1]
    return torch.from_numpy(table).to(device)


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """q [L, H, D], k/v [Hkv, K, D] of one sequence -> [L, H, D]."""
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None],
        k[None],
        v[None],
        attn_mask=mask,
        is_causal=mask is None and q.shape[0] > 1,
        enable_gqa=True,
    )
    return out[0].transpose(0, 1)


def _attend_decodes(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """q [S, H, D]; k/v [Hkv, S, K, D]; bias [Hkv * S, 1, K] (`_head_bias`) -> [S, H, D].
    Query head h reads KV head h // (H / Hkv), the Hugging Face grouped-query convention.
    Scaling and masking ride on the first matmul (`baddbmm`): three ops per layer."""
    hkv, s, width, d = k.shape
    queries = q.view(s, hkv, -1, d).transpose(0, 1).reshape(hkv * s, -1, d)  # [Hkv*S, G, D]
    keys = k.reshape(hkv * s, width, d)  # a view: staged and gathered rows are evenly strided
    scores = torch.baddbmm(bias, queries, keys.transpose(1, 2), alpha=d**-0.5)
    low = scores.dtype in (torch.float16, torch.bfloat16)
    probs = scores.softmax(-1, dtype=torch.float32 if low else None).to(v.dtype)
    out = torch.bmm(probs, v.reshape(hkv * s, width, d))
    return out.view(hkv, s, -1, d).transpose(0, 1).reshape(s, -1, d)


def _head_bias(batch: AttentionBatch, kv_heads: int, dtype: torch.dtype) -> torch.Tensor:
    """The decode mask repeated per KV head, `[Hkv * S, 1, K]`: built by the first layer and
    kept on the batch, so the layers after it only read it."""
    if batch.head_bias is None:
        assert batch.decode_bias is not None
        rows, width = batch.decode_bias.shape
        bias = batch.decode_bias.to(dtype)[None].expand(kv_heads, rows, width)
        batch.head_bias = bias.reshape(kv_heads * rows, 1, width)
    return batch.head_bias


def paged_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    batch: AttentionBatch,
    kv: LayerKV | None,
) -> torch.Tensor:
    """q [T, H, D], k/v [T, Hkv, D]; caches [Hkv, blocks, block_size, D]. Returns [T, H, D]."""
    if batch.slot_mapping is None or kv is None:  # dense: no cache, each span on its own
        spans = [slice(s.first, s.first + s.length) for s in batch.prefills]
        if len(spans) == 1:
            return _attend(q, k.transpose(0, 1), v.transpose(0, 1), batch.prefills[0].mask)
        return torch.cat(
            [_attend(q[s], k[s].transpose(0, 1), v[s].transpose(0, 1), None) for s in spans]
        )
    hkv, nb, bs, d = kv.k.shape
    if batch.stage != "reuse":  # a reuse writes the staged rows; the runner flushes them
        kv.k.view(hkv, nb * bs, d).index_copy_(1, batch.slot_mapping, k.transpose(0, 1))
        kv.v.view(hkv, nb * bs, d).index_copy_(1, batch.slot_mapping, v.transpose(0, 1))
    out = q if batch.all_decode else torch.empty_like(q)
    if batch.decode_index is not None:
        assert batch.decode_bias is not None
        keys, values = _decode_contexts(k, v, batch, kv)
        queries = q if batch.all_decode else q[batch.decode_index]
        o = _attend_decodes(queries, keys, values, _head_bias(batch, hkv, q.dtype))
        if batch.all_decode:
            return o
        out[batch.decode_index] = o
    for span in batch.prefills:
        sl = slice(span.first, span.first + span.length)
        if span.start == 0:  # a fresh prompt's context is its own new keys: nothing to gather
            keys, values = k[sl].transpose(0, 1), v[sl].transpose(0, 1)
        else:
            assert span.blocks is not None
            ctx = span.start + span.length
            keys = kv.k.index_select(1, span.blocks).view(hkv, -1, d)[:, :ctx]
            values = kv.v.index_select(1, span.blocks).view(hkv, -1, d)[:, :ctx]
        out[sl] = _attend(q[sl], keys, values, span.mask)
    return out


def _decode_contexts(
    k: torch.Tensor, v: torch.Tensor, batch: AttentionBatch, kv: LayerKV
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values `[Hkv, rows, width, D]` of the decode rows: staged, or gathered."""
    assert batch.decode_bias is not None
    hkv, _, bs, d = kv.k.shape
    rows, span = batch.decode_bias.shape
    if batch.stage == "reuse":
        assert kv.staged_k is not None and kv.staged_v is not None
        assert batch.stage_slots is not None
        for staged, new in ((kv.staged_k, k), (kv.staged_v, v)):
            staged.view(hkv, -1, d).index_copy_(1, batch.stage_slots, new.transpose(0, 1))
        return kv.staged_k[:, :, :span], kv.staged_v[:, :, :span]
    assert batch.decode_tables is not None
    flat = batch.decode_tables.view(-1)
    wide = batch.decode_tables.shape[1] * bs
    keys = kv.k.index_select(1, flat).view(hkv, rows, wide, d)
    values = kv.v.index_select(1, flat).view(hkv, rows, wide, d)
    if batch.stage == "fill":
        kv.staged_k, kv.staged_v = keys, values
    return keys[:, :, :span], values[:, :, :span]
