"""Fluid's Tune adapter on a two-node Ray cluster (Ray's own `cluster_utils.Cluster`: a head and
a worker node on this host, each with its own raylet and two `vgpu`).

What one node cannot show, read back from Ray rather than from what the adapter asked for:
- trials run on both nodes (each result carries the node its trainable ran on);
- a gang that fits one node stays on it: every bundle of a trial's placement group is on the
  trainable's own node (`placement_group_table`), and a two-device gang offered one free device
  on each node waits for one node rather than split (Ray's `PACK` would split it);
- killing the worker node's raylet mid-run (after a trial finished there, while another runs
  there) loses no finished result: the rows Tune had recorded for every finished trial are the
  same afterwards, in the ResultGrid and read cold from the experiment's storage on the head,
  and the interrupted trial is retried from its checkpoint on the head, so the run completes.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from ray import tune  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray.tune.schedulers import FIFOScheduler  # noqa: E402
from ray.util.placement_group import (  # noqa: E402
    placement_group,
    placement_group_table,
    remove_placement_group,
)

from kairos.fluid.core.model import Limits  # noqa: E402
from kairos.fluid.integrations.ray_tune import (  # noqa: E402
    FluidScheduler,
    fluid_width,
    width_resources,
)

PER_NODE = 2  # vgpu on each node
# Ray's default health check marks a dead raylet's node dead after about 15 s; these make it
# about 5 s, still slack for a live raylet on a loaded host
HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 5,
}
START_S = 180.0  # worker start-up takes tens of seconds on a loaded 2-core host


@dataclass
class TwoNodes:
    cluster: Cluster
    worker: Any  # the worker node's `ray._private.node.Node`, to kill
    head_id: str
    worker_id: str


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[TwoNodes]:
    cluster = Cluster()
    # a marker resource per node pins a device holder to it without starting a process
    head = cluster.add_node(
        wait=False,
        num_cpus=2,
        resources={"vgpu": PER_NODE, "on_head": 1},
        include_dashboard=False,
        _system_config=HEALTH,
    )
    worker = cluster.add_node(wait=False, num_cpus=2, resources={"vgpu": PER_NODE, "on_worker": 1})
    cluster.wait_for_nodes(timeout=START_S)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    yield TwoNodes(cluster, worker, head.node_id, worker.node_id)
    ray.shutdown()
    cluster.shutdown()


def _nodes_of(pg: Any) -> set[str]:
    return set(placement_group_table(pg)["bundles_to_node_id"].values())


def test_a_gang_that_fits_one_node_waits_for_one_instead_of_splitting(
    two_nodes: TwoNodes,
) -> None:
    holders = {
        node: placement_group([{"vgpu": 1.0, marker: 0.01}])
        for node, marker in ((two_nodes.head_id, "on_head"), (two_nodes.worker_id, "on_worker"))
    }
    for node, holder in holders.items():  # one device held on each node, one free
        ray.get(holder.ready(), timeout=START_S)
        assert _nodes_of(holder) == {node}
    gang = width_resources(Fraction(2), cpus=0.25, node_devices=PER_NODE).to_placement_group()
    ready, _ = ray.wait([gang.ready()], timeout=3.0)
    assert not ready, _nodes_of(gang)  # placed now would mean split over the two free devices
    remove_placement_group(holders[two_nodes.worker_id])
    ray.get(gang.ready(), timeout=START_S)
    assert _nodes_of(gang) == {two_nodes.worker_id}  # whole, on the node that freed two
    for pg in (gang, holders[two_nodes.head_id]):
        remove_placement_group(pg)
    # wider than any node: it must span both rather than wait for a node it would never fit
    wide = width_resources(Fraction(4), cpus=0.25, node_devices=PER_NODE).to_placement_group()
    ray.get(wide.ready(), timeout=START_S)
    assert _nodes_of(wide) == {two_nodes.head_id, two_nodes.worker_id}
    remove_placement_group(wide)


def _train(config: dict[str, Any]) -> None:
    """`max_t` results of `score = x * epoch`, a checkpoint with each; every result says which
    node the trainable runs on and which nodes its placement group's bundles are on."""
    pg = ray.util.get_current_placement_group()
    gang = sorted(set(placement_group_table(pg)["bundles_to_node_id"].values()))
    node = ray.get_runtime_context().get_node_id()
    epoch = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            epoch = int(json.loads((Path(d) / "state.json").read_text())["epoch"])
    while epoch < config["max_t"]:
        time.sleep(config["sleep"])
        epoch += 1
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "state.json").write_text(json.dumps({"epoch": epoch}))
            tune.report(
                {
                    "epoch": epoch,
                    "score": config["x"] * epoch,
                    "node": node,
                    "gang_nodes": ",".join(gang),
                    "width": float(fluid_width(tune.get_context().get_trial_resources())),
                },
                checkpoint=tune.Checkpoint.from_directory(d),
            )


ROW = ("epoch", "score", "node", "gang_nodes", "width")


class KillWorkerMidRun(tune.Callback):
    """Records every result as Tune receives it, and kills the worker node (its raylet and
    every process on it) at the first result from the worker after a trial finished there:
    one finished trial's results came from the node that dies, and one trial dies with it."""

    def __init__(self, nodes: TwoNodes) -> None:
        self.nodes = nodes
        self.rows: dict[str, list[tuple[Any, ...]]] = {}
        self.finished: list[str] = []
        self.before: dict[str, list[tuple[Any, ...]]] | None = None  # finished, at the kill
        self.interrupted: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks into the experiment state: the cluster's handle stays here
        return {k: v for k, v in self.__dict__.items() if k != "nodes"}

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **_: Any
    ) -> None:
        self.rows.setdefault(trial.trial_id, []).append(tuple(result[k] for k in ROW))
        worker = self.nodes.worker_id
        on_worker = [t for t in self.finished if self.rows[t][-1][2] == worker]
        if self.before is None and result["node"] == worker and on_worker:
            self.before = {t: list(self.rows[t]) for t in self.finished}
            self.interrupted = trial.trial_id
            self.nodes.cluster.remove_node(self.nodes.worker, allow_graceful=False)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **_: Any) -> None:
        self.finished.append(trial.trial_id)


def _marked_dead(node_id: str, within_s: float) -> bool:
    """Whether Ray marks the node dead (its health check, a few seconds after the kill)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if any(n["NodeID"] == node_id and not n["Alive"] for n in ray.nodes()):
            return True
        time.sleep(0.5)
    return False


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    if frame is None or not set(ROW) <= set(frame.columns):
        return []  # a trial whose results are gone
    return [tuple(r) for r in frame[list(ROW)].itertuples(index=False)]


def test_trials_span_both_nodes_and_a_dead_node_loses_no_finished_result(
    two_nodes: TwoNodes, tmp_path: Path
) -> None:
    max_t = 4
    # width 2 for each trial (4 devices over 2 live trials, capped at d = 2 = one node);
    # eps this large keeps Fluid from resizing, so the widths are the ones asked for
    fluid = FluidScheduler(
        FIFOScheduler(),
        devices=2 * PER_NODE,
        limits=Limits(c=1, d=PER_NODE),
        max_t=max_t,
        eps=1e9,
        concurrency=2,
        cpus_per_bundle=0.5,
    )
    killer = KillWorkerMidRun(two_nodes)
    tuner = tune.Tuner(
        tune.with_resources(_train, fluid.initial_resources()),
        param_space={"x": tune.grid_search([1, 2, 3, 4]), "max_t": max_t, "sleep": 0.5},
        # a budget, so that a run Ray cannot finish (a gang split over the node that died
        # waits for its lost bundle) fails here rather than at pytest's timeout
        tune_config=tune.TuneConfig(
            scheduler=fluid, metric="score", mode="max", reuse_actors=False, time_budget_s=240
        ),
        run_config=tune.RunConfig(
            name="two_nodes",
            storage_path=str(tmp_path),
            failure_config=tune.FailureConfig(max_failures=3),
            callbacks=[killer],
            verbose=0,
        ),
    )
    grid = tuner.fit()
    assert fluid.node_devices == PER_NODE  # read from Ray's nodes: so each gang is STRICT_PACK
    received = [row for history in killer.rows.values() for row in history]
    assert {row[2] for row in received} == {two_nodes.head_id, two_nodes.worker_id}
    for epoch, _, node, gang, width in received:  # each gang on its trainable's node
        assert (gang, width) == (node, 2.0), (epoch, node, gang, width)
    assert killer.before is not None, killer.rows  # the worker was killed mid-run
    assert _marked_dead(two_nodes.worker_id, within_s=60.0)
    assert not grid.errors, grid.errors
    results = {r.metrics["trial_id"]: r for r in (grid[i] for i in range(len(grid))) if r.metrics}
    assert len(results) == 4
    for trial_id, result in results.items():  # the run completed: every trial to max_t
        assert (result.metrics or {}).get("epoch") == max_t, (trial_id, result.metrics)
    rows = {t: _rows(r.metrics_dataframe) for t, r in results.items()}
    # every row the grid holds is one Tune received, and the only ones it may lack are rows the
    # dying node sent for the trial it was running: the result Tune is handling when the node
    # dies was once dropped with that attempt (in a CI run): a row of an unfinished trial,
    # never a finished result
    held, got = Counter(r for h in rows.values() for r in h), Counter(received)
    assert not held - got, held - got
    interrupted = killer.rows[killer.interrupted or ""]
    lost = list((got - held).elements())
    assert all(r in interrupted and r[2] == two_nodes.worker_id for r in lost), lost
    # no finished result lost: what Tune had recorded for each finished trial at the kill is
    # what the ResultGrid holds, and what a cold read of the head's storage finds
    stored = tune.ExperimentAnalysis(str(tmp_path / "two_nodes")).trial_dataframes
    by_id = {trial_id: _rows(frame) for trial_id, frame in stored.items()}
    for trial_id, history in killer.before.items():
        assert [r[0] for r in history] == list(range(1, max_t + 1)), history
        assert rows[trial_id] == history, trial_id
        assert by_id[trial_id] == history, trial_id
    # the interrupted trial went on from its checkpoint on the head: never an epoch again
    assert [r[2] for r in interrupted][:1] == [two_nodes.worker_id], interrupted
    on_head = [r[0] for r in interrupted if r[2] == two_nodes.head_id]
    assert on_head and on_head[0] > 1, interrupted  # not from scratch
    epochs = [r[0] for r in interrupted]
    assert epochs == sorted(set(epochs)) and epochs[-1] == max_t, epochs
    assert rows[killer.interrupted or ""][-1][0] == max_t
