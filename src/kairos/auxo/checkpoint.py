"""Coordinator checkpoint/restart (spec 3.11): the whole `CohortTraining` state on disk, no pickle.

The coordinator's state is plain fields (see `training.py`), so a checkpoint is those fields
walked into two files: `arrays.npz` (every numpy array, loaded with `allow_pickle=False`) and
`state.json` (everything else, with small tags for tuples, sets, deques, int-keyed dicts, numpy
scalars, random generators via `bit_generator.state`, and kairos dataclasses by class name).
Only classes from `kairos.*` modules are rebuilt, so a checkpoint cannot name arbitrary code.
Python floats round-trip exactly through JSON (shortest repr), so a restart continues the run
bit for bit: what is lost is only the rounds after the last checkpoint.

What is *not* saved is what the caller rebuilds the same way: the `RoundRunner` (model, data,
devices, availability; all functions of their seeds) and the `AuxoParams` (saved as JSON and
checked on load, so a restart with other parameters fails loudly).

Checkpoints are written to a fresh folder and published by an atomic rename of `LATEST`, so a
kill during a write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from kairos.auxo.params import AuxoParams
from kairos.auxo.training import CohortTraining, LeafRound
from kairos.fl.learning import RoundRunner

NOT_SAVED = frozenset({"runner", "params", "on_step", "recorder"})  # rebuilt by the caller
POLICY_NOT_SAVED = frozenset({"params", "recorder"})
LATEST = "LATEST"
KEEP = 2  # checkpoints kept on disk (the newest is the one loaded)


class _Encoder:
    """Walks a value into JSON-able data, moving arrays aside under generated keys."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def __call__(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                raise TypeError("object arrays cannot be checkpointed without pickle")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = v
            return {"__array": key}
        if isinstance(v, np.generic):
            return {"__scalar": v.dtype.str, "v": v.item()}
        if isinstance(v, np.random.Generator):
            return {"__rng": self(v.bit_generator.state)}
        if isinstance(v, list):
            return [self(x) for x in v]
        if isinstance(v, tuple):
            return {"__tuple": [self(x) for x in v]}
        if isinstance(v, (set, frozenset)):
            return {"__set": [self(x) for x in sorted(v)]}
        if isinstance(v, collections.deque):
            return {"__deque": [self(x) for x in v], "maxlen": v.maxlen}
        if isinstance(v, dict):
            return {"__dict": [[self(k), self(x)] for k, x in v.items()]}
        cls = type(v)
        if cls.__module__.startswith("kairos.") and hasattr(v, "__dict__"):
            fields = {k: self(x) for k, x in vars(v).items()}
            return {"__obj": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
        raise TypeError(f"cannot checkpoint a {cls.__module__}.{cls.__qualname__}")


def _kairos_class(name: str) -> type:
    module, _, qualname = name.partition(":")
    if not module.startswith("kairos."):
        raise ValueError(f"checkpoint names a class outside kairos: {name!r}")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ValueError(f"{name!r} is not a class")
    return obj


def _decode(v: Any, arrays: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x, arrays) for x in v]
    if not isinstance(v, dict):
        return v
    if "__array" in v:
        return np.array(arrays[v["__array"]])
    if "__scalar" in v:
        return np.dtype(v["__scalar"]).type(v["v"])
    if "__rng" in v:
        state = _decode(v["__rng"], arrays)
        bitgen = getattr(np.random, state["bit_generator"])()
        bitgen.state = state
        return np.random.Generator(bitgen)
    if "__tuple" in v:
        return tuple(_decode(x, arrays) for x in v["__tuple"])
    if "__set" in v:
        return {_decode(x, arrays) for x in v["__set"]}
    if "__deque" in v:
        return collections.deque((_decode(x, arrays) for x in v["__deque"]), v["maxlen"])
    if "__dict" in v:
        return {_decode(k, arrays): _decode(x, arrays) for k, x in v["__dict"]}
    if "__obj" in v:
        obj: Any = object.__new__(_kairos_class(v["__obj"]))
        for k, x in v["fields"].items():
            object.__setattr__(obj, k, _decode(x, arrays))  # frozen dataclasses too
        return obj
    raise ValueError(f"unknown checkpoint node {sorted(v)}")


def coordinator_state(run: CohortTraining) -> dict[str, Any]:
    """The fields that a checkpoint holds (the policy without its params)."""
    names = [f.name for f in dataclasses.fields(run) if f.name not in NOT_SAVED]
    state = {n: getattr(run, n) for n in names}
    state["policy"] = {k: v for k, v in vars(run.policy).items() if k not in POLICY_NOT_SAVED}
    cls = type(run.policy)
    state["policy_class"] = f"{cls.__module__}:{cls.__qualname__}"  # centralized/distributed
    return state


def encode(run: CohortTraining) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(JSON document, arrays) of the coordinator's state; equal states give equal documents."""
    enc = _Encoder()
    doc = {
        "params": run.params.model_dump(mode="json"),
        "steps": len(run.log),
        "state": enc(coordinator_state(run)),
    }
    return doc, enc.arrays


def save(run: CohortTraining, directory: str | Path) -> Path:
    """Write a checkpoint under `directory` and publish it as the latest; returns its folder."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    doc, arrays = encode(run)
    name = f"step-{len(run.log):08d}"
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    np.savez(tmp / "arrays.npz", **arrays)  # type: ignore[arg-type]
    (tmp / "state.json").write_text(json.dumps(doc, allow_nan=True))
    final = root / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    pointer = root / f".{LATEST}.tmp"
    pointer.write_text(name)
    os.replace(pointer, root / LATEST)
    for old in sorted(root.glob("step-*"))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(directory: str | Path) -> Path | None:
    """The folder of the newest complete checkpoint, or None when there is none."""
    pointer = Path(directory) / LATEST
    return Path(directory) / pointer.read_text().strip() if pointer.exists() else None


def load(directory: str | Path, runner: RoundRunner, params: AuxoParams) -> CohortTraining:
    """A fresh coordinator on `runner` holding the latest checkpoint's state."""
    folder = latest(directory)
    if folder is None:
        raise FileNotFoundError(f"no checkpoint under {directory}")
    doc = json.loads((folder / "state.json").read_text())
    if doc["params"] != params.model_dump(mode="json"):
        raise ValueError("the checkpoint was written with other AuxoParams")
    with np.load(folder / "arrays.npz", allow_pickle=False) as arrays:
        state = _decode(doc["state"], arrays)
    run = CohortTraining(runner, params, seed=state.pop("seed"))
    policy = state.pop("policy")
    cls = _kairos_class(state.pop("policy_class"))
    if not isinstance(run.policy, cls):  # a distributed run comes back distributed
        fresh: Any = object.__new__(cls)
        fresh.params, fresh.recorder = params, None
        run.policy = fresh
    for k, v in policy.items():
        setattr(run.policy, k, v)
    for k, v in state.items():
        setattr(run, k, v)
    return run


@dataclasses.dataclass
class Checkpointer:
    """The driver's `on_step` hook: save every `every` steps (leaf-rounds) and at every split."""

    directory: Path
    every: int
    saved: list[int] = dataclasses.field(default_factory=list)  # step counts written

    def __call__(self, run: CohortTraining, entry: LeafRound) -> None:
        steps = len(run.log)
        if entry.split is not None or steps % self.every == 0:
            save(run, self.directory)
            self.saved.append(steps)


def checkpointed(
    runner: RoundRunner, params: AuxoParams, directory: str | Path, seed: int = 0
) -> CohortTraining:
    """Resume from `directory` if it holds a checkpoint, else start; checkpoints as it goes."""
    hook = Checkpointer(Path(directory), params.ckpt_every)
    if latest(directory) is None:
        run = CohortTraining(runner, params, seed=seed)
    else:
        run = load(directory, runner, params)
    run.on_step = hook
    return run
