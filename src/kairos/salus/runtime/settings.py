"""How the Salus service runs: the shared server settings plus the device, the policy, the
allow-list of factory modules and the profiler's parameters (spec 3.9)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kairos.runtime.settings import MIN_BODY_BYTES, OverloadSettings
from kairos.salus.runtime.job import DEFAULT_ALLOWED

Policy = Literal["fifo", "pack", "srtf", "fair"]


class ServiceSettings(OverloadSettings):
    """Validated at startup; a typo in any field fails there, naming the field."""

    policy: Policy = "srtf"
    device: Literal["cpu", "cuda"] = "cpu"
    capacity_bytes: int | None = Field(
        256 * 2**20, ge=1, description="C: the virtual device's memory (CPU); None = the GPU's"
    )
    allow_modules: tuple[str, ...] = Field(
        DEFAULT_ALLOWED,
        min_length=1,
        description="module prefixes factories may be imported from; nothing else is imported",
    )
    switch: Literal["resident", "suspend"] = Field(
        "resident", description="resident: Salus switching; suspend: the Gandiva baseline"
    )
    warmup: int = Field(3, ge=0, le=100, description="profiler W")
    measured: int = Field(5, ge=1, le=1000, description="profiler K")
    account_every: int = Field(
        8,
        ge=1,
        le=10_000,
        description="after admission, memory accounting runs on one iteration in at most this "
        "many (random gaps of 1..N; 1 = every iteration); a job leaking or overrunning its "
        "profile on every iteration is failed within N",
    )
    host_cache: bool = Field(
        True,
        description="CPU device: keep freed tensor memory in the process (glibc mallopt), as "
        "a GPU's caching allocator does, instead of page-faulting it back every iteration",
    )
    margin_p: float = Field(0.10, ge=0, le=10)
    margin_total: float = Field(0.05, ge=0, le=10)
    max_jobs: int = Field(256, ge=1, description="open (unfinished) jobs at which new ones get 429")
    max_records: int = Field(
        10_000, ge=1, description="finished jobs remembered; the oldest are forgotten first"
    )
    torch_threads: int | None = Field(
        None, ge=1, description="torch.set_num_threads for the process (None: torch's default)"
    )
    max_body_bytes: int = Field(16 * 1024, ge=MIN_BODY_BYTES)
