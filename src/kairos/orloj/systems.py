"""Named systems: build any compared scheduler from a name and a few workload facts.

Experiments, tests and the CLI refer to systems by name (`orloj`, `clockwork`, `nexus`,
`clipper`, ...). What a system may know is fixed here, the same for all: the batch-latency
model g_k (each system profiles it offline), the supported batch sizes, the SLO, and the
expected arrival rate (Nexus plans from it). Solo-latency knowledge arrives through
`on_profile` (the simulator's warm start), never from the recording itself.

Batch sizes: each system runs the sizes it really supports (`NATIVE_SIZES`) unless the caller
gives one S for all. Clockwork runs one compiled model per size, S = {1, 2, 4, 8, 16}; Orloj
any size 1-16 (`config.ORLOJ_SIZES`); Clipper and Nexus take S's maximum (Clipper's AIMD
batches any size up to it; Nexus plans in S and runs up to its plan's b queued requests), as
in the paper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.config import ORLOJ_SIZES
from kairos.orloj.policies import (
    ClipperPolicy,
    ClockworkPolicy,
    EDFPolicy,
    NexusPolicy,
    TimeoutBatcher,
)
from kairos.orloj.policies.common import DEFAULT_BATCH_SIZES
from kairos.orloj.policy import BatchPolicy
from kairos.registry import POLICIES, UnknownName

PAPER_SYSTEMS = ("clipper", "nexus", "clockwork", "orloj")  # Appendix C's column order
EXTRA_SYSTEMS = ("clipper-drop", "edf", "timeout")
SYSTEM_NAMES = PAPER_SYSTEMS + EXTRA_SYSTEMS

Builder = Callable[..., BatchPolicy]
# the batch sizes each system runs when no S is given (a plug-in: DEFAULT_BATCH_SIZES)
NATIVE_SIZES: dict[str, tuple[int, ...]] = {
    "orloj": ORLOJ_SIZES,
    **{name: DEFAULT_BATCH_SIZES for name in SYSTEM_NAMES if name != "orloj"},
}


def native_sizes(name: str, model: BatchLatencyModel | None = None) -> tuple[int, ...]:
    """The sizes `name` runs by default; with a calibrated table (the real server's g_k)
    only those it has a row for, so no system is handed a size whose time is unknown."""
    sizes = NATIVE_SIZES.get(name, DEFAULT_BATCH_SIZES)
    if model is not None and model.table is not None:
        sizes = tuple(k for k in sizes if k in model.table)
    return sizes


def _orloj(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    from kairos.orloj.policies.orloj import OrlojPolicy

    return OrlojPolicy(batch_model=model, sizes=tuple(sizes), **kw)


def _clockwork(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    return ClockworkPolicy(model, sizes, **kw)


def _nexus(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    return NexusPolicy(model, slo_ms, sizes, rate_per_ms=rate, **kw)


def _clipper(
    model: BatchLatencyModel,
    slo_ms: float,
    rate: float | None,
    sizes: Sequence[int],
    fixed_sizes: bool = False,
    **kw: Any,
) -> BatchPolicy:
    """Clipper batches any size up to max(S) (the paper's); `fixed_sizes=True`: only S."""
    return ClipperPolicy(slo_ms, cap=max(sizes), sizes=sizes if fixed_sizes else None, **kw)


def _clipper_drop(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    return ClipperPolicy(slo_ms, cap=max(sizes), drop_expired=True, **kw)


def _edf(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    return EDFPolicy(model, sizes, **kw)


def _timeout(
    model: BatchLatencyModel, slo_ms: float, rate: float | None, sizes: Sequence[int], **kw: Any
) -> BatchPolicy:
    return TimeoutBatcher(max_batch_size=max(sizes), **kw)


BUILDERS: dict[str, Builder] = {
    "orloj": _orloj,
    "clockwork": _clockwork,
    "nexus": _nexus,
    "clipper": _clipper,
    "clipper-drop": _clipper_drop,
    "edf": _edf,
    "timeout": _timeout,
}
# In the shared registry under ("orloj", name); a plug-in (entry point `orloj.NAME` in
# `kairos.policies`) is a `Builder`: called as (model, slo_ms, rate, sizes, **options).
for _name in SYSTEM_NAMES:
    POLICIES.add("orloj", _name, BUILDERS[_name])


def make_system(
    name: str,
    *,
    model: BatchLatencyModel,
    slo_ms: float,
    rate_per_ms: float | None = None,
    sizes: Sequence[int] | None = None,
    options: Mapping[str, Any] | None = None,
) -> BatchPolicy:
    """A fresh policy object; `options` are the system's own keyword arguments.

    `sizes` is S for this system; None: a `batch_sizes` option if given, else the system's
    own (`native_sizes`)."""
    opts = dict(options or {})
    if sizes is None:
        given = opts.pop("batch_sizes", None)
        sizes = tuple(given) if given is not None else native_sizes(name, model)
    try:
        builder = POLICIES.get("orloj", name)
    except UnknownName as exc:
        raise ValueError(f"unknown system {name!r}; choose from {', '.join(exc.known)}") from None
    try:
        policy: BatchPolicy = builder(model, slo_ms, rate_per_ms, sizes, **opts)
        return policy
    except TypeError as exc:
        raise ValueError(f"bad options for {name}: {exc}") from None
