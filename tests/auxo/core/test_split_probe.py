"""Option `unlabelled_at_split="probe"` (docs/auxo.md, the E1 claim): a client that a split finds
without a label is placed by the split's own clustering frame instead of a uniform child.

The policy tests build a cohort of two separated groups, split it, and probe clients that never
took part: each must end in the child its group's labelled members hold (under the text's
uniform tie some do not). The training tests check the probe's cost is charged and that the
centralized and distributed modes still give one trajectory with the option on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kairos.auxo import AuxoParams, AuxoPolicy
from kairos.auxo.distributed import DistributedPolicy, distributed
from kairos.auxo.evaluation import FLOAT_BYTES, message_bytes
from kairos.auxo.features import compress
from kairos.auxo.rewards import AffinityEntry
from kairos.auxo.selection import greedy
from kairos.auxo.split_labels import place_at_split
from kairos.auxo.split_probe import probe_unlabelled
from kairos.auxo.training import CohortTraining
from tests.auxo.training.test_distributed import _assert_identical
from tests.auxo.training.test_training import _params, _runner

A, B = np.array([10.0, 10.0]), np.array([-10.0, -10.0])


def _split_policy(option: str, norm: str = "center") -> tuple[AuxoPolicy, dict[str, str]]:
    """Clients 0-9 (group A) and 10-19 (group B) train in the root until its split at round 4;
    returns the policy and each group's child (where its labelled members went)."""
    params = AuxoParams(
        total_rounds=100,
        p_total=20,
        grad_fraction=1.0,
        feature_dtype="float64",
        feature_norm=norm,
        partition_schedule=(4,),
        unlabelled_at_split=option,
    )
    policy = AuxoPolicy(params, seed=3, weights=np.zeros(2))
    rng = np.random.default_rng(0)
    ids = list(range(20))
    split = None
    for r in range(5):
        x = np.concatenate([A + rng.normal(size=(10, 2)), B + rng.normal(size=(10, 2))])
        split = policy.observe("0", r, ids, x).split
    assert split is not None and policy.tree.leaves() == ["0.0", "0.1"]
    child = {
        g: greedy(policy.record(c), policy.tree.leaves(), rng) for g, c in (("A", 0), ("B", 10))
    }
    assert child["A"] != child["B"]
    assert all(greedy(policy.record(c), policy.tree.leaves(), rng) == child["A"] for c in ids[:10])
    return policy, child


@pytest.mark.parametrize("norm", ["center", "unit"])
def test_an_unlabelled_client_near_centroid_k_ends_in_child_k(norm: str) -> None:
    policy, child = _split_policy("probe", norm)
    rng = np.random.default_rng(1)
    for c in range(100, 140):
        group = "A" if c % 2 else "B"
        update = (A if group == "A" else B) + rng.normal(size=2)

        def ask(split: str, u: np.ndarray = update) -> int | None:
            return policy.probe_label(split, u)

        placed = policy.place_unlabelled(c, ask)
        assert [s for s, _ in placed] == ["0"]
        assert policy.select(c, 10_000) == child[group]  # epsilon ~ 0: greedy
        assert policy.membership([c])[c] == child[group]
        assert policy.place_unlabelled(c, lambda s: pytest.fail("probed twice")) == []


def test_under_the_text_s_uniform_tie_some_unlabelled_clients_cross_over() -> None:
    """The old behaviour the option replaces: no frame is kept, ties go either way."""
    policy, child = _split_policy("uniform")
    assert policy.split_frames is None
    assert policy.split_frame("0") is None
    picks = [policy.select(c, 10_000) for c in range(100, 140)]  # whatever their updates
    assert {child["A"], child["B"]} <= set(picks)  # some group-B clients sit in A's child


def test_the_split_frame_reproduces_the_labels_of_its_round() -> None:
    """Nearest centroid in the stored frame = the label that round gave its participants."""
    params = AuxoParams(
        total_rounds=100, p_total=20, grad_fraction=1.0, feature_dtype="float64",
        partition_schedule=(6,), unlabelled_at_split="probe",
    )  # fmt: skip
    w = np.array([0.5, -0.5])
    policy = AuxoPolicy(params, seed=0, weights=w)
    rng = np.random.default_rng(2)
    rep = None
    for r in range(7):
        ids = [int(c) for c in rng.choice(60, 20, replace=False)]
        x = np.where((np.array(ids) < 30)[:, None], A, B) + 3 * rng.normal(size=(20, 2))
        rep = policy.observe("0", r, ids, x)
        if rep.status == "waiting":  # before r_start: no clustering, no frame
            assert policy.split_frames is not None and "0" not in policy.split_frames.frames
            continue
        assert policy.split_frames is not None
        frame = policy.split_frames.frames["0"]
        assert np.array_equal(frame.weights, w)  # the weights this round trained from
        got = [frame.label(compress(u, 1.0, "float64")) for u in x]
        assert got == list(rep.labels)
    assert rep is not None and rep.split is not None
    assert policy.split_frame("0") is not None and policy.split_frame("0.0") is None


def test_a_new_client_probes_top_down_and_a_labelled_one_never() -> None:
    leaves = ["0.0", "0.1.0", "0.1.1"]
    record: dict[str, AffinityEntry] = {}
    asked: list[str] = []

    def ask(split: str) -> int:
        asked.append(split)
        return {"0": 1, "0.1": 0}[split]

    assert place_at_split(record, leaves, ask, 0.1) == [("0", 1), ("0.1", 0)]
    assert asked == ["0", "0.1"]
    assert greedy(record, leaves, np.random.default_rng(0)) == "0.1.0"
    assert record["0.1.0"].reward == pytest.approx(0.2) and record["0.0"].reward == 0.0
    labelled = {"0": AffinityEntry(0.0, 0), "0.0": AffinityEntry(0.1), "0.1": AffinityEntry(0.0)}
    assert place_at_split(labelled, ["0.0", "0.1"], lambda s: pytest.fail("asked"), 0.1) == []
    tied_but_labelled = {"0": AffinityEntry(0.0, 0)}
    assert place_at_split(tied_but_labelled, ["0.0", "0.1"], ask, 0.1) == []  # text's rule
    failed: dict[str, AffinityEntry] = {}
    assert place_at_split(failed, ["0.0", "0.1"], lambda s: None, 0.1) == []
    assert failed == {}


def _first_split(params: AuxoParams, seed: int) -> CohortTraining:
    run = CohortTraining(_runner(), params, seed=seed)
    while len(run.leaves()) == 1:
        run.step()
    return run


def test_a_probe_is_charged_as_a_local_round_and_its_time() -> None:
    run = _first_split(_params(partition_schedule=(5,), unlabelled_at_split="probe"), seed=4)
    n_bytes = run.model.n_params * FLOAT_BYTES
    t = max(run.states[c].now for c in run.leaves())
    done = 0
    for c in range(len(run.dataset)):
        record = run.policy.record(c)
        if "0" in record and record["0"].label is not None:
            continue
        before = dict(vars(run.usage))
        probed = probe_unlabelled(run, c, t)
        assert probed  # every unlabelled client ties at the root's split (R = 0 there)
        assert run.free_at[c] > t  # busy for the probe's duration
        spent = {k: v - before[k] for k, v in vars(run.usage).items()}
        if record.get("0", AffinityEntry()).label is None:  # offline mid-probe: download paid
            assert spent == {**dict.fromkeys(spent, 0), "dispatched": 1, "model_bytes": n_bytes}
            continue
        assert spent == {
            "cohort_rounds": 0,
            "participant_rounds": 1,
            "dispatched": 1,
            "model_bytes": 2 * n_bytes,
            "affinity_bytes": message_bytes("0"),
        }
        label = record["0"].label
        assert label is not None
        mine, other = f"0.{label}", f"0.{1 - label}"
        assert record[mine].reward - record[other].reward == pytest.approx(0.1)
        assert not probe_unlabelled(run, c, t)  # placed: no second probe
        done += 1
    assert done >= 5


def _counting(run: CohortTraining) -> list[tuple[str, int | None]]:
    calls: list[tuple[str, int | None]] = []
    policy = run.policy
    label = policy.probe_label

    def counted(split: str, update: np.ndarray) -> int | None:
        out = label(split, update)
        calls.append((split, out))
        return out

    policy.probe_label = counted  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("kw", [{"partition_schedule": (5, 9)}, {"total_rounds": 30}])
def test_distributed_mode_follows_the_centralized_trajectory_with_probes(kw: Any) -> None:
    params = _params(unlabelled_at_split="probe", **kw)
    central = CohortTraining(_runner(), params, seed=5 if "partition_schedule" in kw else 1)
    dist = distributed(CohortTraining(_runner(), params, seed=central.seed))
    calls = [_counting(central), _counting(dist)]
    rounds = 16 if "partition_schedule" in kw else 30
    central.run(rounds, eval_every=5)
    dist.run(rounds, eval_every=5)
    assert isinstance(dist.policy, DistributedPolicy) and dist.policy.records == {}
    assert calls[0] == calls[1] and len(calls[0]) >= 10
    assert central.usage == dist.usage
    _assert_identical(central, dist)
