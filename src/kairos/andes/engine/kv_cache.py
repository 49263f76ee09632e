"""The KV cache tensors behind the scheduler's block tables, and the host swap pool.

`kv_blocks.BlockManager` decides which block ids a request holds; this class owns the memory
those ids index: per layer, keys and values shaped `[num_blocks, block_size, kv_heads,
head_dim]` on the device, and the same shape in host memory (pinned when the device is a GPU,
so copies can overlap) for requests preempted by swap. Swaps copy whole blocks by id.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kairos.andes.engine.config import ModelConfig


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
        shape = (num_gpu_blocks, block_size, cfg.num_key_value_heads, cfg.head_dim)
        host_shape = (num_cpu_blocks, *shape[1:])
        pin = device.type == "cuda"
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = [
            (
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
        src = torch.tensor([g for g, _ in mapping], device=self.layers[0][0].device)
        dst = torch.tensor([c for _, c in mapping])
        for (k, v), (hk, hv) in zip(self.layers, self.host, strict=True):
            hk[dst] = k[src].to("cpu", non_blocking=False)
            hv[dst] = v[src].to("cpu", non_blocking=False)

    def swap_in(self, mapping: Sequence[tuple[int, int]]) -> None:
        """Copy host blocks back to the device: `mapping` is [(cpu_block, gpu_block), ...]."""
        if not mapping:
            return
        device = self.layers[0][0].device
        src = torch.tensor([c for c, _ in mapping])
        dst = torch.tensor([g for _, g in mapping], device=device)
        for (k, v), (hk, hv) in zip(self.layers, self.host, strict=True):
            k[dst] = hk[src].to(device)
            v[dst] = hv[src].to(device)
