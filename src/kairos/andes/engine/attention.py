"""Attention over a paged KV cache, in plain torch.

Every scheduled token of an iteration sits in one flat batch (prefills, chunks and decodes
together, sequence after sequence, as in vLLM), so the linear layers run once over all of
them. Attention then writes the new keys and values into their cache slots and reads each
sequence's whole context back through its block table:

- decodes (one new token each) are batched into one `scaled_dot_product_attention` call,
  keys padded to the longest context among them and masked;
- prefills and prefill chunks run one call each, without padding, so a batch of prompts costs
  the sum of their lengths (what the latency model and the simulator assume), not
  `batch x longest` (the loop is the CPU stand-in for a variable-length attention kernel).

`AttentionBatch.dense` gives the same computation without a cache (one sequence, causal), the
reference the paged path is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F


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
    decode_tables: torch.Tensor | None = None  # [D, max_blocks], padded with block 0
    decode_mask: torch.Tensor | None = None  # [D, 1, 1, max_blocks * block_size]
    all_decode: bool = False  # every token is a decode: outputs need no scatter
    prefills: list[PrefillSpan] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        starts: Sequence[int],
        lengths: Sequence[int],
        block_tables: Sequence[Sequence[int]],
        block_size: int,
        device: torch.device,
    ) -> AttentionBatch:
        """`starts[s]`: tokens of sequence s already in the cache; `lengths[s]`: new tokens."""
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        slots: list[np.ndarray] = []
        dec_rows: list[int] = []
        dec_tables: list[Sequence[int]] = []
        dec_ctx: list[int] = []
        prefills: list[PrefillSpan] = []
        for first, st, ln, blocks in zip(firsts, starts, lengths, block_tables, strict=True):
            used = list(blocks[: -(-(st + ln) // block_size)])  # later chunks' blocks unused
            pos = np.arange(st, st + ln)
            slots.append(
                np.asarray(used, dtype=np.int64)[pos // block_size] * block_size + pos % block_size
            )
            if ln == 1:
                dec_rows.append(int(first))
                dec_tables.append(used)
                dec_ctx.append(st + 1)
                continue
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
            slot_mapping=torch.from_numpy(np.concatenate(slots)).to(device),
            last_index=torch.from_numpy(firsts + np.asarray(lengths) - 1).to(device),
            prefills=prefills,
            all_decode=not prefills,
        )
        if dec_rows:
            width = max(len(t) for t in dec_tables)
            table = np.zeros((len(dec_rows), width), dtype=np.int64)
            for i, t in enumerate(dec_tables):
                table[i, : len(t)] = t
            k_pos = np.arange(width * block_size)
            visible = k_pos[None, :] < np.asarray(dec_ctx)[:, None]
            batch.decode_index = torch.tensor(dec_rows, dtype=torch.long, device=device)
            batch.decode_tables = torch.from_numpy(table).to(device)
            batch.decode_mask = torch.from_numpy(visible)[:, None, None, :].to(device)
        return batch

    @classmethod
    def dense(cls, length: int, device: torch.device) -> AttentionBatch:
        return cls(
            slot_mapping=None,
            last_index=torch.tensor([length - 1], device=device),
            prefills=[PrefillSpan(0, length, 0, None, None)],
        )


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """q [L, H, D], k/v [K, Hkv, D] of one sequence -> [L, H, D]."""
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None],
        k.transpose(0, 1)[None],
        v.transpose(0, 1)[None],
        attn_mask=mask,
        is_causal=mask is None and q.shape[0] > 1,
        enable_gqa=True,
    )
    return out[0].transpose(0, 1)


def paged_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    batch: AttentionBatch,
    k_cache: torch.Tensor | None,
    v_cache: torch.Tensor | None,
) -> torch.Tensor:
    """q [T, H, D], k/v [T, Hkv, D]; caches [blocks, block_size, Hkv, D]. Returns [T, H, D]."""
    if batch.slot_mapping is None or k_cache is None or v_cache is None:
        (span,) = batch.prefills  # dense: one sequence, no cache
        return _attend(q, k, v, span.mask)
    nb, bs, hkv, d = k_cache.shape
    k_flat, v_flat = k_cache.view(nb * bs, hkv, d), v_cache.view(nb * bs, hkv, d)
    k_flat.index_copy_(0, batch.slot_mapping, k)
    v_flat.index_copy_(0, batch.slot_mapping, v)
    out = q if batch.all_decode else torch.empty_like(q)
    if batch.decode_index is not None:
        assert batch.decode_tables is not None
        rows, width = batch.decode_tables.shape
        flat = batch.decode_tables.view(-1)  # index_select: about twice as fast as indexing
        keys = k_cache.index_select(0, flat).view(rows, width * bs, hkv, d).transpose(1, 2)
        values = v_cache.index_select(0, flat).view(rows, width * bs, hkv, d).transpose(1, 2)
        queries = q if batch.all_decode else q[batch.decode_index]
        o = F.scaled_dot_product_attention(
            queries[:, :, None, :], keys, values, attn_mask=batch.decode_mask, enable_gqa=True
        )[:, :, 0, :]
        if batch.all_decode:
            return o
        out[batch.decode_index] = o
    for span in batch.prefills:
        assert span.blocks is not None
        ctx = span.start + span.length
        sl = slice(span.first, span.first + span.length)
        keys = k_cache.index_select(0, span.blocks).view(-1, hkv, d)[:ctx]
        values = v_cache.index_select(0, span.blocks).view(-1, hkv, d)[:ctx]
        out[sl] = _attend(q[sl], keys, values, span.mask)
    return out
