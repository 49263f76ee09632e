"""Attention over a paged KV cache, in plain torch.

Every scheduled token of an iteration sits in one flat batch (prefills, chunks and decodes
together, sequence after sequence, as in vLLM). Each layer writes the new keys and values
into cache slots (`slot_mapping`), then each sequence gathers its whole context back through
its block table and attends with `scaled_dot_product_attention`. Sequences are padded to the
longest query and context of the batch, with a mask that is causal in absolute positions.

`AttentionBatch.dense` gives the same computation without a cache (one sequence, causal), the
reference the paged path is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class AttentionBatch:
    """Where an iteration's tokens go in the cache and what each sequence attends to."""

    slot_mapping: torch.Tensor | None  # [T] cache slot of every new token; None = no cache
    block_tables: torch.Tensor | None  # [S, max_blocks] padded with 0
    query_index: torch.Tensor  # [S, max_q] index into the flat tokens (padding repeats 0)
    query_valid: torch.Tensor  # [S, max_q] bool
    mask: torch.Tensor  # [S, 1, max_q, max_k] bool: may attend
    last_index: torch.Tensor  # [S] flat index of each sequence's last token
    uniform: bool = False  # every sequence has max_q new tokens: no padding (decode batches)
    out_index: torch.Tensor | None = None  # [T] flat positions of real tokens in [S * max_q]

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
        n = len(starts)
        max_q = max(lengths)
        ctx = [st + ln for st, ln in zip(starts, lengths, strict=True)]
        max_blocks = max(-(-c // block_size) for c in ctx)
        max_k = max_blocks * block_size
        offsets = torch.tensor([0, *lengths[:-1]], dtype=torch.long).cumsum(0)
        i = torch.arange(max_q)
        lens = torch.tensor(lengths, dtype=torch.long)
        valid = i[None, :] < lens[:, None]
        q_index = torch.where(valid, offsets[:, None] + i[None, :], 0)
        q_pos = torch.tensor(starts, dtype=torch.long)[:, None] + i[None, :]
        k_pos = torch.arange(max_k)
        mask = k_pos[None, None, :] <= q_pos[:, :, None]
        mask[:, :, 0] |= ~valid  # padded rows attend somewhere, so no row is all -inf
        table = torch.zeros(n, max_blocks, dtype=torch.long)
        slots: list[int] = []
        for s, (blocks, st, ln) in enumerate(zip(block_tables, starts, lengths, strict=True)):
            used = -(-(st + ln) // block_size)  # a table may hold blocks for later chunks
            table[s, :used] = torch.tensor(blocks[:used], dtype=torch.long)
            for p in range(st, st + ln):
                slots.append(blocks[p // block_size] * block_size + p % block_size)
        return cls(
            slot_mapping=torch.tensor(slots, dtype=torch.long, device=device),
            block_tables=table.to(device),
            query_index=q_index.to(device),
            query_valid=valid.to(device),
            mask=mask[:, None].to(device),
            last_index=(offsets + lens - 1).to(device),
            uniform=bool(valid.all()),
            out_index=valid.flatten().nonzero().flatten().to(device),
        )

    @classmethod
    def dense(cls, length: int, device: torch.device) -> AttentionBatch:
        i = torch.arange(length)
        return cls(
            slot_mapping=None,
            block_tables=None,
            query_index=i[None].to(device),
            query_valid=torch.ones(1, length, dtype=torch.bool, device=device),
            mask=(i[None, :] <= i[:, None])[None, None].to(device),
            last_index=torch.tensor([length - 1], device=device),
            uniform=True,
        )


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
        keys, values = k[None], v[None]  # dense: one sequence, no cache
    else:
        nb, bs, hkv, d = k_cache.shape
        k_cache.view(nb * bs, hkv, d)[batch.slot_mapping] = k
        v_cache.view(nb * bs, hkv, d)[batch.slot_mapping] = v
        assert batch.block_tables is not None
        n, mb = batch.block_tables.shape
        keys = k_cache[batch.block_tables].view(n, mb * bs, hkv, d)
        values = v_cache[batch.block_tables].view(n, mb * bs, hkv, d)
    s, max_q = batch.query_index.shape
    # [S, max_q, H, D]: a view when no sequence is padded, else a gather
    queries = q.view(s, max_q, *q.shape[1:]) if batch.uniform else q[batch.query_index]
    out = F.scaled_dot_product_attention(
        queries.transpose(1, 2),
        keys.transpose(1, 2),
        values.transpose(1, 2),
        attn_mask=batch.mask,
        enable_gqa=True,
    ).transpose(1, 2)  # [S, max_q, H, D]
    flat = out.reshape(s * max_q, *out.shape[2:])
    return flat if batch.uniform or batch.out_index is None else flat[batch.out_index]
