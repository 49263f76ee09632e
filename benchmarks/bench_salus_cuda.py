"""Salus on a GPU: what only a CUDA machine can measure.

With CUDA present: the runtime benchmark (`bench_salus_runtime`) on the GPU (per-iteration
overhead through the service against a plain loop, E6's rows, the switch gap resident versus
suspend/resume), and the real-service experiments with lanes as CUDA streams and memory pools:
E2 (the SRTF snapshot), E3 (FAIR shares 1, 1/2, 1/3 and back) and E4 (FIFO / PACK makespan for
a GPU-idle and a GPU-saturating model; paper 2.38x and 1.07x). Without CUDA it says so and
measures nothing (the CPU service is measured by `bench_salus_runtime` and `bench_salus`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from benchmarks import bench_salus_runtime
from kairos.experiments import ExperimentContext
from kairos.salus.experiments import on_service, on_service_e4


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    if not torch.cuda.is_available():
        print("bench_salus_cuda: no CUDA device here; nothing measured")
        return [{"case": "no CUDA device: not measured"}]
    name = torch.cuda.get_device_name()
    rows = [{"case": f"device {name}, torch {torch.__version__}"}]
    rows += bench_salus_runtime.run(out_dir, quick=quick, kind="cuda")
    ctx = ExperimentContext(out_dir / "salus_cuda", progress=False, cache=False)
    e2 = on_service.service_e2(on_service.ServiceE2Config(device="cuda"), ctx)
    rows.append({"case": "E2 on the GPU", **e2["summary"]})
    e3_cfg = on_service.ServiceE3Config(device="cuda", **({"solo_s": 2.0} if quick else {}))
    e3 = on_service.service_e3(e3_cfg, ctx)
    shares = [
        round(sum(r[f"job{k}_share"] for r in e3["rows"]) / len(e3["rows"]), 3) for k in range(3)
    ]
    rows.append({"case": "E3 on the GPU", "mean_shares": str(shares), **e3["summary"]})
    e4_cfg = on_service_e4.ServiceE4Config(device="cuda", repeats=2 if quick else 3)
    for r in on_service_e4.service_e4(e4_cfg, ctx)["rows"]:
        rows.append({"case": f"E4 on the GPU, {r['batch']}", **r})
    return rows


if __name__ == "__main__":
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--quick", action="store_true")
    args.add_argument("--out", type=Path, default=Path("results/bench"))
    a = args.parse_args()
    run(a.out, quick=a.quick)
