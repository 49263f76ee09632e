"""The headline of each system: one experiment whose numbers the README quotes, which of its
JSON values are the headline rows, and the paper's number beside each.

Only the paper's numbers are typed here, each from the spec of its system
(`shared/specs/<system>.md`, section cited beside it); ours are always read from the JSON the
experiment writes (`<out>/<system>/<name>/<name>.json`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Headline:
    """One headline row: `key` of the JSON row under `part` whose columns equal `where`
    (`part` is "rows", or a list in the summary such as "summary.averages"; "summary" itself
    when `where` is empty)."""

    label: str
    key: str
    paper: float | str
    source: str  # where in the spec the paper's number is
    part: str = "rows"
    where: Mapping[str, Any] = field(default_factory=dict)
    # the row's keys of the 95% CI's ends, where they are not `key`_lo / `key`_hi or a
    # half-width `key`_ci95 (found without being named)
    ci: tuple[str, str] | None = None


@dataclass(frozen=True)
class SystemHeadline:
    system: str
    experiment: str
    rows: tuple[Headline, ...]
    # applied on top of the experiment's own quick settings by `kairos report --quick`
    quick_overrides: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


def _venn(policy: str, paper: float) -> Headline:
    # spec section 5, Table 4.1, row "Even"
    return Headline(
        f"{policy} speed-up over Random, Even", "speedup", paper, "venn spec §5 Table 4.1",
        where={"workload": "even", "policy": policy},
    )  # fmt: skip


def _fluid(tuner: str, paper: float | str, source: str) -> Headline:
    return Headline(
        f"{tuner}: time-to-target speed-up, cifar, 8 GPUs", "speedup", paper, source,
        where={"workload": "cifar", "tuner": tuner, "gpus": 8, "k_base": 8},
    )  # fmt: skip


def _orloj(slo: float, paper: float) -> Headline:
    # spec section 5, Real-world (Tables C.4-C.7): SkipNet/ImageNet, ORLOJ 0.24/0.62/0.92/0.95/0.89
    # at SLO 1.5/2/3/4/5 x P99
    return Headline(
        f"Orloj finish rate, SkipNet/ImageNet, SLO {slo:g}x P99", "finish_rate", paper,
        "orloj spec §5 Real-world, Tables C.4-C.7",
        where={"workload": "skipnet-imagenet", "slo_mult": slo, "system": "orloj"},
    )  # fmt: skip


def _auxo(algorithm: str) -> list[Headline]:
    where = {"algorithm": algorithm}
    return [
        # spec section 5, Table 3.3: speed-ups 1.2x-2.2x and final-accuracy gains +3.4 to +8.2
        # over the datasets that partition (Reddit: none)
        Headline(f"{algorithm}: speed-up to one model's best accuracy", "speedup", "1.2-2.2",
                 "auxo spec §5 Table 3.3", where=where),
        Headline(f"{algorithm}: final mean accuracy gain (points)", "d_final_mean", "3.4-8.2",
                 "auxo spec §5 Table 3.3", where=where),
        # spec section 5, Table 3.4: "Variance falls by 4.8% (Speech) to 53.8% (Review)"
        Headline(f"{algorithm}: change of accuracy variance across clients", "variance_change",
                 "-0.048 to -0.538", "auxo spec §5 Table 3.4", where=where),
    ]  # fmt: skip


# spec section 5, Table 2.1 (minutes): average JCT and makespan per scheduler
_SALUS_AVG_JCT = {"fifo": 170.6, "srtf": 53.4, "pack": 145.5, "fair": 96.6}
_SALUS_MAKESPAN = {"fifo": 303.4, "srtf": 306.0, "pack": 287.4, "fair": 301.6}


def _salus() -> tuple[Headline, ...]:
    """FIFO / policy, as the experiment pairs them; SRTF's 3.19x is "the headline number"."""
    source = "salus spec §5 Table 2.1"
    jct = [
        Headline(f"FIFO / {p.upper()} average JCT", "jct_vs_fifo",
                 round(_SALUS_AVG_JCT["fifo"] / _SALUS_AVG_JCT[p], 2), source, where={"policy": p},
                 ci=("jct_lo", "jct_hi"))
        for p in ("srtf", "pack", "fair")
    ]  # fmt: skip
    span = Headline(
        "FIFO / PACK makespan", "makespan_vs_fifo",
        round(_SALUS_MAKESPAN["fifo"] / _SALUS_MAKESPAN["pack"], 3), source,
        where={"policy": "pack"}, ci=("makespan_lo", "makespan_hi"),
    )  # fmt: skip
    return (*jct, span)


# spec section 7, E2: "Paper: up to 4.7x average QoE"
_ANDES = Headline(
    "Andes / FCFS average QoE, best burst intensity (Llama-3.1-70B)",
    "llama-3.1-70b_max_gain",
    4.7,
    "andes spec §7 E2",
    part="summary",
)

# spec section 5, "Per algorithm": SyncBOHB about 2x, BOHB and ASHA about 30%; "Synchronous
# stage-based (SyncBOHB, HyperBand) gain most": 30-100% (Figs 3.7, 3.8); PBT: "small gain"
_FLUID = (
    _fluid("syncbohb", 2.0, "fluid spec §5 Per algorithm (§3.1)"),
    _fluid("hyperband", "1.3-2.0", "fluid spec §5 Figs 3.7, 3.8"),
    _fluid("asha", 1.3, "fluid spec §5 Per algorithm (§3.1)"),
    _fluid("bohb", 1.3, "fluid spec §5 Per algorithm (§3.1)"),
    _fluid("pbt", "small gain", "fluid spec §5 Fig 3.7"),
)

HEADLINES: tuple[SystemHeadline, ...] = (
    SystemHeadline(
        "andes",
        "e2",
        (_ANDES,),
        # the headline is Andes over FCFS: Sarathi and LQSF would double the quick run
        {"policies": ["fcfs", "andes"]},
        "Quick report: FCFS and Andes only (quick mode adds Sarathi and LQSF).",
    ),
    SystemHeadline(
        "orloj",
        "realworld",
        (_orloj(1.5, 0.24), _orloj(3.0, 0.92), _orloj(5.0, 0.89)),
        # the headline workload only: the experiment's three quick workloads take three times
        # as long
        {"workloads": ["skipnet-imagenet"]},
        "Quick report: SkipNet/ImageNet only (quick mode runs three workloads, the full run "
        "all ten).",
    ),
    SystemHeadline("salus", "table2_1", _salus()),
    SystemHeadline("fluid", "fig3_7", _FLUID),
    SystemHeadline(
        "auxo",
        "e1",
        (*_auxo("fedavg"), *_auxo("yogi")),
        # the headline populations only: quick mode's label-skew and unequal-groups cases
        # add three more pairs of arms, 2.5 times the cost
        {"label_skew": None, "unequal": None},
        "Quick report: equal groups only (quick mode adds YoGi under label skew and both "
        "algorithms on unequal groups).",
    ),
    SystemHeadline(
        "venn", "table4_1", (_venn("fifo", 1.38), _venn("srsf", 1.69), _venn("venn", 1.87))
    ),
)


def headline(system: str) -> SystemHeadline:
    for h in HEADLINES:
        if h.system == system:
            return h
    raise KeyError(f"no headline for {system!r}; known: {', '.join(h.system for h in HEADLINES)}")


def locate_row(result: Mapping[str, Any], row: Headline) -> Mapping[str, Any]:
    """The JSON row (or summary) holding `row`'s value (a KeyError names what is missing)."""
    node: Any = result
    for step in row.part.split("."):
        node = node[step]
    if not row.where:
        return dict(node)
    matches = [r for r in node if all(r.get(k) == v for k, v in row.where.items())]
    if len(matches) != 1:
        raise KeyError(f"{len(matches)} rows of {row.part} match {dict(row.where)}")
    return dict(matches[0])


def locate(result: Mapping[str, Any], row: Headline) -> Any:
    """The value of `row` in a result file's JSON (a KeyError names what is missing)."""
    return locate_row(result, row)[row.key]


def interval(result: Mapping[str, Any], row: Headline) -> list[float] | None:
    """The 95% CI of `row`'s value as [low, high], when its result gives one."""
    r = locate_row(result, row)
    value, key = r[row.key], row.key
    ends: list[Any]
    if row.ci is not None:
        ends = [r.get(row.ci[0]), r.get(row.ci[1])]
    elif f"{key}_lo" in r and f"{key}_hi" in r:
        ends = [r[f"{key}_lo"], r[f"{key}_hi"]]
    elif isinstance(r.get(f"{key}_ci95"), int | float) and isinstance(value, int | float):
        ends = [value - r[f"{key}_ci95"], value + r[f"{key}_ci95"]]
    else:
        return None
    finite = [float(e) for e in ends if isinstance(e, int | float) and math.isfinite(e)]
    return finite if len(finite) == 2 else None


def seeds(result: Mapping[str, Any], row: Headline) -> int | None:
    """How many seeds `row`'s value stands on, when its result says ("0..9" counts 10)."""
    n = locate_row(result, row).get("seeds", result.get("summary", {}).get("seeds"))
    if isinstance(n, bool):
        return None
    if isinstance(n, int):
        return n
    if isinstance(n, list):
        return len(n)
    if isinstance(n, str) and ".." in n:
        lo, hi = n.split("..", 1)
        if lo.strip().isdigit() and hi.strip().isdigit():
            return int(hi) - int(lo) + 1
    return None
