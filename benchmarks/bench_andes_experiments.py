"""The Andes experiments in full mode, with the claims they are meant to show as 0/1 columns.

Run by `make bench` (quick mode with `--quick`). Results, plots and the point cache go to
`<out>/andes/<experiment>/`; a re-run reuses every finished simulation point.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from kairos.experiments import ExperimentContext, get_experiment

ORDER = ["e1", "e2", "capacity", "e3", "e4", "e5", "ablation", "e6", "e7", "e8", "e9", "e10", "e11"]


def _run(name: str, out: Path, quick: bool) -> tuple[list[dict[str, Any]], float]:
    exp = get_experiment("andes", name)
    ctx = ExperimentContext(out_dir=out / "andes" / name, jobs=2, progress=False)
    start = time.perf_counter()
    rows: list[dict[str, Any]] = exp.run(exp.config(quick=quick), ctx)
    return rows, time.perf_counter() - start


def _e2(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for prof in sorted({r["profile"] for r in rows}):
        by = {(r["intensity"], r["policy"]): r["avg_qoe"] for r in rows if r["profile"] == prof}
        hs = sorted({h for h, _ in by})
        top = hs[-1]
        out[f"{prof}_andes_over_fcfs_at_{top:g}"] = by[(top, "andes")] / by[(top, "fcfs")]
        out[f"{prof}_andes_best_at_h>=2"] = int(
            all(
                by[(h, "andes")] > by[(h, b)]
                for h in hs
                if h >= 2.0
                for b in ("fcfs", "sarathi", "lqsf")
            )
        )
    return out


def _capacity(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cells = [r for r in rows if not math.isnan(r["fcfs_req_s"]) or not math.isnan(r["andes_req_s"])]
    ok = [
        not math.isnan(r["andes_req_s"])
        and (math.isnan(r["fcfs_req_s"]) or r["andes_req_s"] >= r["fcfs_req_s"])
        for r in cells
    ]
    out: dict[str, Any] = {"cells": len(rows), "andes_at_or_above_fcfs": sum(ok)}
    for r in rows:
        if r["target"] == 0.95:
            out[f"{r['profile']}_gain_095"] = r["gain"]
            out[f"{r['profile']}_paper_gain_095"] = r["paper_gain"]
    return out


def _pair(rows: list[dict[str, Any]], key: str = "policy") -> dict[str, Any]:
    return {
        f"{r[key]}_{m}": r[m]
        for r in rows
        for m in ("avg_qoe", "share_qoe_095", "avg_ttft", "avg_tds")
        if m in r
    }


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in ORDER:
        result, wall = _run(name, Path(out_dir), quick)
        row: dict[str, Any] = {"case": f"experiment {name}", "wall_s": wall}
        if name == "e2":
            row |= _e2(result)
        elif name == "capacity":
            row |= _capacity(result)
        elif name == "e4":
            row |= _pair(result)
        rows.append(row)
    return rows
