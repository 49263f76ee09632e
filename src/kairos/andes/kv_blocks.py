"""Paged KV-cache bookkeeping: GPU blocks, a bounded host (swap) pool, per-request block tables.

Block ids are real so the torch engine can use the same tables for paged attention; the
simulator only needs the counts. A request holds `ceil(context / block_size)` GPU blocks; when
it is swapped out, each GPU block is paired with a host block (the mapping the engine copies).
"""

from __future__ import annotations

from collections import deque


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


class BlockPool:
    def __init__(self, num_blocks: int) -> None:
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self.num_blocks = num_blocks
        self._free: deque[int] = deque(range(num_blocks))

    @property
    def free(self) -> int:
        return len(self._free)

    @property
    def used(self) -> int:
        return self.num_blocks - len(self._free)

    def take(self, n: int) -> list[int]:
        if n > len(self._free):
            raise MemoryError(f"need {n} blocks, {len(self._free)} free")
        return [self._free.popleft() for _ in range(n)]

    def give(self, blocks: list[int]) -> None:
        self._free.extend(blocks)


class BlockManager:
    """Block tables for every resident request, on the GPU and in the swap pool."""

    def __init__(self, num_gpu_blocks: int, num_cpu_blocks: int, block_size: int) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.block_size = block_size
        self.gpu = BlockPool(num_gpu_blocks)
        self.cpu = BlockPool(num_cpu_blocks)
        self.tables: dict[str, list[int]] = {}
        self.cpu_tables: dict[str, list[int]] = {}

    def gpu_blocks(self, request_id: str) -> int:
        return len(self.tables.get(request_id, ()))

    def blocks_needed(self, request_id: str, tokens: int) -> int:
        """Additional GPU blocks to hold `tokens` of context for this request."""
        return max(0, blocks_for(tokens, self.block_size) - self.gpu_blocks(request_id))

    def can_grow(self, request_id: str, tokens: int, reserve: int = 0) -> bool:
        return self.blocks_needed(request_id, tokens) <= self.gpu.free - reserve

    def grow(self, request_id: str, tokens: int) -> None:
        need = self.blocks_needed(request_id, tokens)
        table = self.tables.setdefault(request_id, [])
        if need:
            table.extend(self.gpu.take(need))

    def grow_all(self, contexts: list[tuple[str, int]]) -> bool:
        """Grow every (request, tokens) in order if all fit together, else change nothing.

        The scheduler's common decode iteration: one pass instead of a check per request,
        with the same blocks, in the same order, that growing each in turn would take."""
        tables, size = self.tables, self.block_size
        needs = []
        for rid, tokens in contexts:
            held = tables.get(rid)
            needs.append(max(0, blocks_for(tokens, size) - (len(held) if held else 0)))
        if sum(needs) > self.gpu.free:
            return False
        take = self.gpu.take
        for (rid, _), need in zip(contexts, needs, strict=True):
            table = tables.setdefault(rid, [])
            if need:
                table.extend(take(need))
        return True

    def free(self, request_id: str) -> None:
        self.gpu.give(self.tables.pop(request_id, []))
        self.cpu.give(self.cpu_tables.pop(request_id, []))

    def can_swap_out(self, request_id: str) -> bool:
        return self.gpu_blocks(request_id) <= self.cpu.free

    def swap_out(self, request_id: str) -> list[tuple[int, int]]:
        gpu = self.tables.pop(request_id, [])
        cpu = self.cpu.take(len(gpu))
        self.cpu_tables[request_id] = cpu
        self.gpu.give(gpu)
        return list(zip(gpu, cpu, strict=True))

    def can_swap_in(self, request_id: str, reserve: int = 0) -> bool:
        return len(self.cpu_tables.get(request_id, ())) <= self.gpu.free - reserve

    def swap_in(self, request_id: str) -> list[tuple[int, int]]:
        cpu = self.cpu_tables.pop(request_id, [])
        gpu = self.gpu.take(len(cpu))
        self.tables[request_id] = gpu
        self.cpu.give(cpu)
        return list(zip(cpu, gpu, strict=True))

    @property
    def usage(self) -> float:
        return self.gpu.used / self.gpu.num_blocks if self.gpu.num_blocks else 0.0
