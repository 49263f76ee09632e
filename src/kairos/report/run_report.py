"""`kairos report`: run each system's headline experiment, time it, and write the site.

Every experiment runs afresh (no sweep cache) into `<out>/<system>/<name>/`, whose old
contents are removed first, so the site shows only what this commit computed and each time is
the experiment's whole cost. The timings and provenance go to `<out>/report.json`.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kairos.experiments import ExperimentContext, get_experiment
from kairos.report.headlines import HEADLINES, SystemHeadline
from kairos.report.results import write_result
from kairos.report.site import write_site


def pick(only: Sequence[str] | None) -> list[SystemHeadline]:
    """The headlines of the systems in `only` (all when empty), in the registry's order."""
    known = [h.system for h in HEADLINES]
    unknown = [s for s in only or () if s not in known]
    if unknown:
        raise KeyError(f"no headline for {', '.join(unknown)}; known: {', '.join(known)}")
    return [h for h in HEADLINES if not only or h.system in only]


def run_experiment(out: Path, spec: SystemHeadline, *, quick: bool, jobs: int) -> dict[str, Any]:
    """Run one headline experiment into `out/<system>/<name>`; its timing row."""
    exp = get_experiment(spec.system, spec.experiment)
    cfg = exp.config(quick=quick, overrides=spec.quick_overrides if quick else None)
    folder = out / spec.system / spec.experiment
    shutil.rmtree(folder, ignore_errors=True)
    ctx = ExperimentContext(out_dir=folder, jobs=jobs, progress=False, cache=False)
    start, cpu = time.perf_counter(), cpu_seconds()
    exp.run(cfg, ctx)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    if not (folder / f"{spec.experiment}.json").is_file():
        raise RuntimeError(f"{spec.system} {spec.experiment} wrote no {spec.experiment}.json")
    return {
        "system": spec.system,
        "experiment": spec.experiment,
        "title": exp.title,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "command": command(spec, quick),
    }


def cpu_seconds() -> float:
    """CPU time of this process and its finished workers: on a busy machine the wall time
    grows with the other load, the CPU time hardly."""
    own, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def command(spec: SystemHeadline, quick: bool) -> str:
    """The `kairos <system> experiment` command line that runs what the report ran."""
    words = ["kairos", spec.system, "experiment", spec.experiment]
    if quick:
        words.append("--quick")
        words += [f"--set '{k}={json.dumps(v)}'" for k, v in spec.quick_overrides.items()]
    return " ".join(words)


def run_report(
    out: str | Path,
    *,
    quick: bool = False,
    only: Sequence[str] | None = None,
    jobs: int = 1,
    echo: Callable[[str], None] = print,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Run the headline experiments, write `report.json` and the site; the index page.
    `settings` replaces a system's quick overrides (with `quick`): smaller runs that still
    write every headline row, for tests."""
    out = Path(out)
    specs = [
        replace(s, quick_overrides=settings[s.system]) if settings and s.system in settings else s
        for s in pick(only)
    ]
    rows = []
    load = os.getloadavg()[0]  # the machine's other work, which the wall times include
    start = time.perf_counter()
    for spec in specs:
        echo(f"report: {spec.system} {spec.experiment}{' --quick' if quick else ''} ...")
        rows.append(run_experiment(out, spec, quick=quick, jobs=jobs))
        echo(f"report: {spec.system} {spec.experiment} took {rows[-1]['seconds']:.1f} s")
    total = round(time.perf_counter() - start, 2)
    write_result(
        out,
        "report",
        config={"quick": quick, "systems": [s.system for s in specs], "jobs": jobs},
        rows=rows,
        summary={
            "total_s": total,
            "total_cpu_s": round(sum(r["cpu_seconds"] for r in rows), 2),
            "load_average": round(load, 2),
        },
    )
    return write_site(out)
