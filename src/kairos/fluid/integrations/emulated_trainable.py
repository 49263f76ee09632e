"""A Tune trainable with emulated timing (spec 6.3): each epoch takes the wall time the
simulator's hidden device model gives the trial at the width Ray granted it, scaled down, and
reports the simulator's learning curve for its configuration.

On a CPU-only host real trials cannot show what packing or data-parallel scaling buys (two
processes on one core are not a GPU shared by two), so the time an epoch takes comes from the
same ground truth the simulator uses: `Workload.truth` for the configuration and
`DeviceModel.gang` (a width of `w >= 1` bundles: the ring all-reduce model) or
`DeviceModel.packed` (a `1/c` slot, assumed shared with `c - 1` trials like itself, since a
Tune trial does not know who shares its device). The truth and the noise are drawn from
generators keyed by the seed and the configuration, never by Tune's trial id, so the same
configuration behaves the same in every run of a paired comparison. The trainable checkpoints
every epoch, so a Fluid resize (a pause and a restore) continues where it left off.

    config = {"x0": ..., "x5": ..., "workload": "wlm", "seed": 0, "scale": 0.006, "stride": 3,
              "max_t": 27}

`scale` is wall seconds per modelled second; `stride` is the workload's iterations per Tune
iteration (27 results of 3 iterations each follow a preset calibrated at 81 iterations, at a
third of Tune's per-result overhead): one result at width 1 on the "wlm" preset's 20 s
iterations sleeps 3 x 20 x 0.006 = 0.36 s.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from kairos.fluid.core.model import Width
from kairos.fluid.device_model import DeviceModel
from kairos.fluid.workloads import TrialTruth, Workload, preset

SETTINGS = ("workload", "seed", "scale", "max_t", "stride", "resource")


def keyed_rng(*parts: object) -> np.random.Generator:
    """A generator drawn from `parts` alone (the simulator keys its draws the same way)."""
    key = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(key, "little"))


def point_of(config: dict[str, Any]) -> dict[str, float]:
    """The configuration's point of the unit cube, without the emulation's own settings."""
    return {k: float(v) for k, v in config.items() if k not in SETTINGS}


def truth_of(workload: Workload, config: dict[str, Any], seed: int) -> TrialTruth:
    point = point_of(config)
    return workload.truth(point, keyed_rng(seed, "truth", sorted(point.items())))


def epoch_seconds(truth: TrialTruth, width: Width, device: DeviceModel | None = None) -> float:
    """Modelled seconds of one epoch at `width`: a gang of `w` devices (w = 1: `t1`), or a
    `1/c` slot shared with `c - 1` trials like this one."""
    device = device or DeviceModel()
    if width < 1:
        c = round(1 / width)
        return device.packed(truth, [truth] * (c - 1))
    return device.gang(truth, int(width))


def accuracy_at(workload: Workload, config: dict[str, Any], seed: int, epoch: int) -> float:
    """The learning curve's value after `epoch` epochs, with the run's noise for that epoch."""
    truth = truth_of(workload, config, seed)
    point = sorted(point_of(config).items())
    noise = keyed_rng(seed, "noise", point, epoch).normal(0.0, workload.noise)
    return truth.metric(epoch, workload.m0, float(noise))


def train_emulated(config: dict[str, Any]) -> None:
    """One result per `stride` iterations until `max_t` results: `accuracy`, `epoch` (results
    so far), the width Ray granted (`fluid_width`, read from the trial's placement group each
    time) and the modelled seconds the result stood for (`model_s`); a checkpoint with every
    result."""
    from ray import tune

    from kairos.fluid.integrations.ray_tune import fluid_width

    workload = preset(str(config.get("workload", "wlm")))
    seed, scale = int(config.get("seed", 0)), float(config.get("scale", 0.006))
    stride = int(config.get("stride", 1))
    max_t, resource = int(config.get("max_t", workload.max_t)), str(config.get("resource", "vgpu"))
    truth = truth_of(workload, config, seed)
    epoch = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            epoch = int(json.loads((Path(d) / "state.json").read_text())["epoch"])
    while epoch < max_t:
        start = time.perf_counter()
        width: Fraction = fluid_width(tune.get_context().get_trial_resources(), resource)
        modelled = stride * epoch_seconds(truth, width)
        epoch += 1
        accuracy = accuracy_at(workload, config, seed, epoch * stride)
        time.sleep(max(0.0, start + modelled * scale - time.perf_counter()))
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "state.json").write_text(json.dumps({"epoch": epoch}))
            tune.report(
                {
                    "accuracy": accuracy,
                    "epoch": epoch,
                    "fluid_width": float(width),
                    "model_s": modelled,
                },
                checkpoint=tune.Checkpoint.from_directory(d),
            )


def study_target(workload: Workload, max_t: int, quantile: float) -> float:
    """The `quantile` of the noiseless metric after `max_t` epochs over random configurations:
    `Workload.target`'s calibration (which takes the 98th percentile at the preset's own
    `max_t`) for a shorter study, where a few samples must still reach it."""
    rng = np.random.default_rng(0)
    finals = []
    for _ in range(2000):
        config = {f"x{i}": v for i, v in enumerate(rng.random(workload.dims))}
        finals.append(workload.truth(config, rng).metric(max_t, workload.m0, 0.0))
    return float(np.quantile(finals, quantile))
