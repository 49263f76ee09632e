"""Run every benchmark module's `run(out_dir, quick)` and write a combined JSON result."""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path
from typing import Any

from kairos.report import print_table, write_result

MODULES = [
    "benchmarks.bench_event_loop",
    "benchmarks.bench_andes",
    "benchmarks.bench_engine",
    "benchmarks.bench_serving",
    "benchmarks.bench_orloj",
    "benchmarks.bench_venn",
    "benchmarks.bench_venn_store",
    "benchmarks.bench_fluid",
    "benchmarks.bench_fluid_ray_tune",
    "benchmarks.bench_salus",
    "benchmarks.bench_salus_runtime",
    "benchmarks.bench_salus_cuda",
    "benchmarks.bench_auxo",
    "benchmarks.bench_andes_experiments",
    "benchmarks.bench_timing_claims",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", help="module name suffixes to run")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for name in MODULES:
        if args.only and not any(name.endswith(o) for o in args.only):
            continue
        module = importlib.import_module(name)
        start = time.perf_counter()
        out = module.run(args.out, quick=args.quick)
        for row in out:
            rows.append({"benchmark": name.rsplit(".", 1)[-1], **row})
        print(f"{name}: {time.perf_counter() - start:.1f}s")
    print_table(rows, title="benchmarks")
    write_result(args.out, "benchmarks", config=vars(args) | {"out": str(args.out)}, rows=rows)


if __name__ == "__main__":
    main()
