"""The staged decode contexts of one decode batch, between iterations (attention.py, "Staging").

A `DecodeStage` remembers which requests its staged rows hold and the tokens that reuse
iterations wrote only there, and decides, per iteration, whether the batch's contexts
gathered last time can be reused: only when this iteration decodes exactly the sequences the
last one did, each one token further, with no swap in between. Any other iteration first
flushes what the reuses wrote only to the staged rows into the paged cache.

The CPU hook (hook.py) keeps one stage for its whole-batch path and one per decode lane
(lanes.py): each lane's half of the batch is staged on its own, in its own `LayerKV` objects
that share the paged tensors with the cache. Deciding a stage's mode flushes; the hook does
it for every lane on its own thread before the lanes run, so no flush (which may write a
stale token into a slot freed meanwhile) races another lane's writes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kairos.andes.engine.attention import AttentionBatch, StageMode
from kairos.andes.engine.kv_cache import LayerKV

STAGE_HEADROOM_BLOCKS = 4  # a fill gathers this many blocks more than needed: 64 reuses


class DecodeStage:
    def __init__(self, layers: list[LayerKV], block_size: int, enabled: bool) -> None:
        self.layers = layers
        self.block_size = block_size
        self.enabled = enabled
        # what the staged contexts hold: request ids, each row's next position, capacity
        self._staged: tuple[tuple[str, ...], list[int], int] | None = None
        # tokens written only to the staged rows: (paged slots, staged flat slots) per reuse
        self._unflushed: list[tuple[torch.Tensor, torch.Tensor]] = []

    def mode(
        self, rids: Sequence[str], starts: list[int], lengths: Sequence[int], swaps: bool
    ) -> tuple[StageMode, int]:
        """How this iteration uses staging, and how many blocks a fill gathers per row.
        Flushes (before this iteration's swaps and gathers read the cache) unless it reuses."""
        mode: StageMode = "off"
        blocks = 0
        if self.enabled and not swaps and all(n == 1 for n in lengths):
            bs = self.block_size
            prev = self._staged
            if prev and prev[0] == tuple(rids) and prev[1] == starts and max(starts) < prev[2]:
                mode, blocks = "reuse", prev[2] // bs
            else:
                mode = "fill"
                blocks = -(-(max(starts) + 1) // bs) + STAGE_HEADROOM_BLOCKS
        if mode == "off":
            self.unstage()
        else:
            if mode == "fill":
                self.flush()
            self._staged = (tuple(rids), [s + 1 for s in starts], blocks * self.block_size)
        return mode, blocks

    def record(self, batch: AttentionBatch) -> None:
        """A reuse writes its new tokens to the staged rows only: remember them for the flush."""
        if batch.stage == "reuse":
            assert batch.slot_mapping is not None and batch.stage_slots is not None
            self._unflushed.append((batch.slot_mapping, batch.stage_slots))

    def unstage(self) -> None:
        """Flush, then drop the staged contexts."""
        self.flush()
        if self._staged is not None:
            for layer in self.layers:
                layer.unstage()
        self._staged = None

    def flush(self) -> None:
        """Copy the tokens that reuse iterations wrote only to the staged rows into their
        paged slots (one gather and one scatter per layer and tensor)."""
        if not self._unflushed:
            return
        slots = torch.cat([s for s, _ in self._unflushed])
        rows = torch.cat([r for _, r in self._unflushed])
        self._unflushed.clear()
        with torch.inference_mode():
            for layer in self.layers:
                for paged, staged in ((layer.k, layer.staged_k), (layer.v, layer.staged_v)):
                    assert staged is not None
                    hkv, _, _, d = paged.shape
                    src = staged.view(hkv, -1, d).index_select(1, rows)
                    paged.view(hkv, -1, d).index_copy_(1, slots, src)
