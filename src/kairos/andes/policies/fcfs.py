"""FCFS, as vLLM 0.6 schedules: admit in arrival order, evict the newest under memory pressure.

Prefill-only iterations admit as many waiting requests as fit in `max_num_batched_tokens` and
`max_num_seqs` (leaving the block watermark free); otherwise every running request decodes.
When a decode step cannot get a block, the most recently admitted request is preempted.
"""

from __future__ import annotations

from kairos.andes.policy import Decision, SchedulerView, fcfs_order, newest_first


class FCFSPolicy:
    name = "fcfs"
    chunked_prefill = False
    chunk_size: int | None = None

    def decide(self, view: SchedulerView) -> Decision:
        return Decision(admit=fcfs_order(view), victims=newest_first(view))
