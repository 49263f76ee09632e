"""The KV cache tensors behind the scheduler's block tables, and the host swap pool.

`kv_blocks.BlockManager` decides which block ids a request holds; this class owns the memory
those ids index: per layer, keys and values shaped `[kv_heads, num_blocks, block_size,
head_dim]` on the device (head-major: a gather by block id yields each KV head's contexts
contiguously, the layout the attention's matmuls want), and the same shape in host memory
(pinned when the device is a GPU, so copies can overlap) for requests preempted by swap.
Swaps copy whole blocks by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kairos.andes.engine.config import ModelConfig


@dataclass
class LayerKV:
    """One layer's paged keys and values, and the decode batch's contexts staged contiguously
    `[kv_heads, rows, capacity, head_dim]` between iterations (see `attention.py`)."""

    k: torch.Tensor
    v: torch.Tensor
    staged_k: torch.Tensor | None = None
    staged_v: torch.Tensor | None = None

    def unstage(self) -> None:
        self.staged_k = self.staged_v = None


class KVCache:
    def __init__(
        self,
        cfg: ModelConfig,
        num_gpu_blocks: int,
        num_cpu_blocks: int,
        block_size: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        self.block_size = block_size
        shape = (cfg.num_key_value_heads, num_gpu_blocks, block_size, cfg.head_dim)
        host_shape = (shape[0], num_cpu_blocks, *shape[2:])
        pin = device.type == "cuda"
        self.layers: list[LayerKV] = [
            LayerKV(
                torch.zeros(shape, dtype=dtype, device=device),
                torch.zeros(shape, dtype=dtype, device=device),
            )
            for _ in range(cfg.num_hidden_layers)
        ]
        self.host: list[tuple[torch.Tensor, torch.Tensor]] = [
            (
                torch.zeros(host_shape, dtype=dtype, pin_memory=pin),
                torch.zeros(host_shape, dtype=dtype, pin_memory=pin),
            )
            for _ in range(cfg.num_hidden_layers)
        ]
        self.bytes_per_token = (
            2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * dtype.itemsize
        )

    def swap_out(self, mapping: Sequence[tuple[int, int]]) -> None:
        """Copy device blocks to host blocks: `mapping` is [(gpu_block, cpu_block), ...]."""
        if not mapping:
            return
        src = torch.tensor([g for g, _ in mapping], device=self.layers[0].k.device)
        dst = torch.tensor([c for _, c in mapping])
        for layer, (hk, hv) in zip(self.layers, self.host, strict=True):
            hk[:, dst] = layer.k[:, src].to("cpu", non_blocking=False)
            hv[:, dst] = layer.v[:, src].to("cpu", non_blocking=False)

    def swap_in(self, mapping: Sequence[tuple[int, int]]) -> None:
        """Copy host blocks back to the device: `mapping` is [(cpu_block, gpu_block), ...]."""
        if not mapping:
            return
        device = self.layers[0].k.device
        src = torch.tensor([c for c, _ in mapping])
        dst = torch.tensor([g for _, g in mapping], device=device)
        for layer, (hk, hv) in zip(self.layers, self.host, strict=True):
            layer.k[:, dst] = hk[:, src].to(device)
            layer.v[:, dst] = hv[:, src].to(device)
