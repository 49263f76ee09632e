"""Module-level point functions for the sweep tests (process pools need picklable functions)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel


class PointConfig(BaseModel):
    seed: int = 0
    x: float = 1.0
    n: int = 1000
    log_dir: str = ""


def noisy_mean(cfg: PointConfig) -> dict[str, Any]:
    """A seeded computation; logs each call so tests can count recomputation.

    A file `STOP-<x>` in the log folder makes the point fail, standing in for an interruption
    that does not change the point's config (and so its cache key).
    """
    if cfg.log_dir:
        Path(cfg.log_dir, f"{cfg.x}-{cfg.seed}-{os.getpid()}").touch()
    if cfg.log_dir and Path(cfg.log_dir, f"STOP-{cfg.x}").exists():
        raise RuntimeError(f"interrupted at x={cfg.x}")
    rng = np.random.default_rng(cfg.seed)
    sample = rng.normal(cfg.x, 1.0, size=cfg.n)
    return {"x": cfg.x, "mean": float(sample.mean()), "q": sample[:3].tolist()}


class FileConfig(BaseModel):
    """A point that reads a file named in its config (`path`) and one it finds by a fixed name
    in `folder`, which only its `input_files()` tells the sweep about."""

    path: str
    folder: str

    def input_files(self) -> list[Path]:
        return [Path(self.folder, "fixed.txt")]


def read_inputs(cfg: FileConfig) -> dict[str, Any]:
    named = float(Path(cfg.path).read_text())
    fixed = float(Path(cfg.folder, "fixed.txt").read_text())
    return {"named": named, "fixed": fixed}


def thread_counts(cfg: PointConfig) -> dict[str, Any]:
    """The BLAS threads this process would run a point with, and what it tells late loaders."""
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return {"pid": os.getpid(), "blas": blas, "omp_env": os.environ.get("OMP_NUM_THREADS")}
