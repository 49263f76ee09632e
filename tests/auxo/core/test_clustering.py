"""CLIENTCLUSTERING (spec 3.2): labels persist, centroids are rebuilt every round."""

from __future__ import annotations

import numpy as np

from kairos.auxo.clustering import NO_LABEL, cluster_round, kmeans
from kairos.auxo.features import unit_rows
from kairos.auxo.params import AuxoParams

P = AuxoParams(total_rounds=100, k=2)  # r_start 2, labels frozen after round 50


def two_groups(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    truth = np.arange(n) % 2
    centres = np.array([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]])
    return unit_rows(centres[truth] + 0.2 * rng.normal(size=(n, 4))), truth


def agree(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b) or np.array_equal(a, 1 - b))


def test_kmeans_finds_two_clear_groups_and_is_seeded() -> None:
    f, truth = two_groups(30, np.random.default_rng(1))
    lab1, _, sse1 = kmeans(f, 2, np.random.default_rng(7))
    lab2, _, sse2 = kmeans(f, 2, np.random.default_rng(7))
    assert agree(lab1, truth)
    assert np.array_equal(lab1, lab2) and sse1 == sse2


def test_too_few_and_waiting_keep_labels() -> None:
    f, _ = two_groups(10, np.random.default_rng(0))
    claimed = np.full(10, NO_LABEL)
    rng = np.random.default_rng(0)
    few = cluster_round(f[:4], claimed[:4], initialised=False, round_local=10, params=P, rng=rng)
    assert few.status == "too_few" and not few.initialised
    early = cluster_round(f, claimed, initialised=False, round_local=1, params=P, rng=rng)
    assert early.status == "waiting" and np.all(early.labels == NO_LABEL)
    assert not early.initialised


def test_first_clustering_runs_kmeans_then_relabels_by_renormalised_centroids() -> None:
    rng = np.random.default_rng(3)
    f, truth = two_groups(20, rng)
    out = cluster_round(
        f, np.full(20, NO_LABEL), initialised=False, round_local=5, params=P, rng=rng
    )
    assert out.status == "initialised" and out.initialised
    assert agree(out.labels, truth)
    # next round: new features of the same clients plus unlabelled newcomers
    g, truth2 = two_groups(24, rng)
    claimed = np.concatenate([out.labels, np.full(4, NO_LABEL)])
    nxt = cluster_round(g, claimed, initialised=True, round_local=6, params=P, rng=rng)
    assert nxt.status == "relabelled"
    assert nxt.centroids is not None
    assert np.allclose(np.linalg.norm(nxt.centroids, axis=1), 1.0)
    assert agree(nxt.labels, truth2)  # newcomers got labelled too
    assert np.all(nxt.labels != NO_LABEL)


def test_an_empty_sub_cluster_keeps_all_labels() -> None:
    f, _ = two_groups(10, np.random.default_rng(0))
    claimed = np.array([0] * 6 + [NO_LABEL] * 4)
    out = cluster_round(
        f, claimed, initialised=True, round_local=10, params=P, rng=np.random.default_rng(0)
    )
    assert out.status == "empty_cluster"
    assert np.array_equal(out.labels, claimed)


def test_labels_are_frozen_late_in_training() -> None:
    f, truth = two_groups(10, np.random.default_rng(0))
    wrong = 1 - truth
    wrong[0] = truth[0]  # mostly wrong labels that relabelling would fix
    late = cluster_round(
        f,
        wrong,
        initialised=True,
        round_local=P.r_freeze_labels + 1,
        params=P,
        rng=np.random.default_rng(0),
    )
    assert late.status == "frozen" and np.array_equal(late.labels, wrong)
    on_time = cluster_round(
        f,
        wrong,
        initialised=True,
        round_local=P.r_freeze_labels,
        params=P,
        rng=np.random.default_rng(0),
    )
    assert on_time.status == "relabelled" and not np.array_equal(on_time.labels, wrong)


def test_inputs_are_not_modified() -> None:
    f, truth = two_groups(10, np.random.default_rng(0))
    claimed = truth.copy()
    f0 = f.copy()
    cluster_round(
        f, claimed, initialised=True, round_local=10, params=P, rng=np.random.default_rng(0)
    )
    assert np.array_equal(claimed, truth) and np.array_equal(f, f0)
