"""Compile the knapsack's kernels before the first decision, not during it.

The gain grid and the greedy packer are numba functions, compiled on their first call (or
loaded from numba's cache on disk, which a different numba version invalidates). Left to the
first solve, that costs about a second of one decision on a 2-core machine, while requests
wait. A server calls `compile_kernels` at start-up: one throwaway solve on a small made-up
state, through the same code and argument types as a real solve, on a fresh policy object
so the server's policy keeps no trace of it.
"""

from __future__ import annotations

from kairos.andes.latency import LatencyModel
from kairos.andes.policies.andes import AndesPolicy
from kairos.andes.policy import Policy, SchedulerView
from kairos.andes.request import Request, Status

_BLOCK = 16


def compile_kernels(policy: Policy, latency: LatencyModel) -> None:
    """One solve of `policy`'s kind (a no-op for policies without a knapsack)."""
    if isinstance(policy, AndesPolicy):
        AndesPolicy(policy.config, policy.name)._solve(small_view(latency))


def small_view(latency: LatencyModel, now: float = 100.0) -> SchedulerView:
    """Four running streams behind their readers and four queued. One reader is faster than
    any batch can serve, so every batch size from one up is a candidate and the packer runs
    its many-column kernel."""
    running = []
    for i in range(4):
        speed = 1e4 if i == 0 else 5.0 + i
        r = Request(f"run{i}", now - 10.0, 64, 256, 1.0, speed, status=Status.RUNNING)
        for k in range(8 + 4 * i):
            r.deliver(now - 9.0 + 0.25 * k)
        r.computed = r.context_len
        r.admitted_seq, r.admitted_at = i, now - 9.5
        running.append(r)
    waiting = [
        Request(f"wait{i}", now - 1.0 + 0.1 * i, 32 * (i + 1), 128, 1.0, 5.0) for i in range(4)
    ]
    blocks = sum(-(-r.context_len // _BLOCK) + 1 for r in (*running, *waiting))
    return SchedulerView(
        now=now,
        iteration=1,
        running=running,
        waiting=waiting,
        swapped=[],
        free_blocks=blocks // 2,
        total_blocks=blocks,
        free_cpu_blocks=0,
        block_size=_BLOCK,
        latency=latency,
        max_num_seqs=8,
        max_num_batched_tokens=2048,
        watermark_blocks=0,
    )
