"""Sarathi-Serve: decodes never stall for a prefill; prompts are prefilled in chunks.

Admission is FCFS as in vLLM; each iteration first schedules one token for every running
request, then fills the rest of a per-iteration token budget (`chunk_size`, default 512) with
prefill chunks of admitted requests (the mechanism does the chunking when the policy sets
`chunked_prefill`). Low TBT for running streams, at the cost of slower TTFT under load.
"""

from __future__ import annotations

from kairos.andes.policy import Decision, SchedulerView, fcfs_order, newest_first


class SarathiPolicy:
    name = "sarathi"
    chunked_prefill = True

    def __init__(self, chunk_size: int | None = None) -> None:
        """`chunk_size` overrides the scheduler's `SchedulerConfig.chunk_size` when given."""
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.chunk_size = chunk_size

    def decide(self, view: SchedulerView) -> Decision:
        return Decision(admit=fcfs_order(view), victims=newest_first(view))
