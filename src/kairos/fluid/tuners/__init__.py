"""Tuning algorithms that run under the Fluid driver. Each only forms TrialGroups (spec 2.2);
none decides where or how wide a trial runs. `make_tuner(name, ...)` builds one by name."""

from __future__ import annotations

from typing import Any

from kairos.fluid.tuner import Tuner
from kairos.fluid.tuners.asha import ASHA
from kairos.fluid.tuners.grid import GridSearch
from kairos.fluid.tuners.hyperband import HyperBand
from kairos.fluid.tuners.pbt import PBT
from kairos.fluid.tuners.sampling import RandomSampler, Sampler, TPESampler
from kairos.fluid.tuners.sha import SuccessiveHalving

NAMES = ("grid", "random", "sha", "hyperband", "syncbohb", "asha", "bohb", "pbt")


def make_tuner(name: str, dims: int, seed: int, max_t: int, concurrency: int, **kw: Any) -> Tuner:
    """The spec's settings (section 4): HyperBand/BOHB/SyncBOHB max_t 81, eta 3; ASHA grace 1,
    eta 3; PBT population 8. `concurrency` is the live-trial count of the rolling groups (the
    GPU count without Fluid, Fluid's K with it)."""
    rnd = RandomSampler(dims, seed)
    if name == "grid":
        return GridSearch(dims, max_t, points=kw.get("points", 3))
    if name == "random":
        return GridSearch(dims, max_t, sampler=rnd, n=kw.get("n", 27))
    if name == "sha":
        return SuccessiveHalving(rnd, n=kw.get("n", 27), r_min=kw.get("r_min", 3), max_t=max_t)
    if name == "hyperband":
        return HyperBand(rnd, max_t=max_t, concurrent=True)
    if name == "syncbohb":
        return HyperBand(TPESampler(dims, seed), max_t=max_t, concurrent=False, name="syncbohb")
    if name == "asha":
        return ASHA(rnd, max_t=max_t, concurrency=concurrency, n=kw.get("n", 64))
    if name == "bohb":
        tpe = TPESampler(dims, seed)
        return ASHA(tpe, max_t=max_t, concurrency=concurrency, n=kw.get("n", 64), name="bohb")
    if name == "pbt":
        return PBT(rnd, max_t=max_t, population=kw.get("population", 8), seed=seed)
    raise KeyError(f"no tuner {name!r}; known: {', '.join(NAMES)}")


__all__ = [
    "ASHA",
    "NAMES",
    "PBT",
    "GridSearch",
    "HyperBand",
    "Sampler",
    "SuccessiveHalving",
    "make_tuner",
]
