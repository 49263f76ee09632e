"""Spec 7.8: the Auxo pipeline never reads raw client data or labels.

Clustering is post-processing of the updates the server already receives, so local DP guarantees
are unchanged. Checked three ways: no public function takes data or labels; the package imports
no dataset code; and a full policy run over updates computed from guarded client data never
touches that data (the guard raises on any access after the updates are made).
"""

from __future__ import annotations

import ast
import inspect
import pkgutil
from importlib import import_module
from pathlib import Path

import numpy as np

import kairos.auxo
from kairos.auxo import AuxoParams, AuxoPolicy

FORBIDDEN = {"x", "y", "data", "dataset", "labels_true", "targets", "samples", "images", "texts"}
CORE = [
    "params",
    "features",
    "clustering",
    "criteria",
    "tree",
    "rewards",
    "selection",
    "matching",
    "assignment",
    "policy",
]


def test_no_public_function_accepts_data_or_targets() -> None:
    checked = 0
    for name in CORE:
        mod = import_module(f"kairos.auxo.{name}")
        for obj_name, obj in vars(mod).items():
            if obj_name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            funcs = (
                [obj]
                if inspect.isfunction(obj)
                else [
                    f
                    for n, f in vars(obj).items()
                    if inspect.isfunction(f) and not n.startswith("_")
                ]
                if inspect.isclass(obj)
                else []
            )
            for f in funcs:
                params = set(inspect.signature(f).parameters)
                assert not params & FORBIDDEN, (
                    f"{mod.__name__}.{f.__qualname__}: {params & FORBIDDEN}"
                )
                checked += 1
    assert checked > 30


def test_the_package_imports_no_dataset_or_training_code() -> None:
    root = Path(kairos.auxo.__file__).parent
    names = [m.name for m in pkgutil.iter_modules([str(root)])]
    assert set(CORE) <= set(names)
    for name in CORE:
        tree = ast.parse((root / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("kairos.fl"), (name, node.module)
                assert "sklearn" not in node.module and "torch" not in node.module
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in {"numpy", "math", "copy"}, alias.name


class GuardedData:
    """A client's private data: readable while it trains, and never again."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y, self.sealed = x, y, False

    def train(self, w: np.ndarray) -> np.ndarray:
        """One least-squares gradient step; returns the pseudo-gradient w - w_local."""
        if self.sealed:
            raise AssertionError("client data was read after training")
        grad = self._x.T @ (self._x @ w - self._y) / len(self._y)
        return 0.1 * grad

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the pipeline touched client data ({name})")


def test_a_policy_run_reads_updates_only() -> None:
    rng = np.random.default_rng(0)
    groups = [rng.normal(size=4) * 3 for _ in range(2)]
    clients = []
    for i in range(40):
        x = rng.normal(size=(20, 4))
        clients.append(GuardedData(x, x @ groups[i % 2]))
    params = AuxoParams(total_rounds=40, p_total=20, grad_fraction=1.0, k=2)
    policy = AuxoPolicy(params, seed=0)
    w = np.zeros(4)
    reports = []
    for r in range(12):
        ids = [int(c) for c in rng.choice(40, 20, replace=False)]
        updates = np.stack([clients[c].train(w) for c in ids])
        for c in clients:
            c.sealed = True  # from here on, any read of client data fails the test
        choice = {c: policy.select(c, r) for c in ids}
        for leaf in policy.tree.leaves():
            mine = [c for c in ids if choice[c] == leaf]
            if mine:
                reports.append(policy.observe(leaf, r, mine, updates[[ids.index(c) for c in mine]]))
        for c in clients:
            c.sealed = False
    assert any(rep.status == "initialised" for rep in reports)
    assert all(isinstance(c, GuardedData) for c in clients)
