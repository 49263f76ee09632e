"""The wire format shared by Auxo's Flower server and clients: tree encoding, the affinity record
in a client's Flower state, parameter flattening, and the cohort's restricted grid view."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, RecordDict
from hypothesis import given
from hypothesis import strategies as st

from kairos.auxo.integrations.flower_cohort import CohortGrid
from kairos.auxo.integrations.flower_records import (
    catch_up,
    decode_splits,
    encode_splits,
    flatten,
    leaves_of,
    load_record,
    save_record,
    unflatten_like,
)
from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import AffinityEntry
from kairos.auxo.tree import CohortTree

entries = st.builds(
    AffinityEntry,
    st.floats(-5, 5, allow_nan=False),
    st.one_of(st.none(), st.integers(0, 3)),
    st.booleans(),
)
cohort_ids = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(
    lambda p: ".".join(["0", *map(str, p)])
)


@given(st.dictionaries(cohort_ids, entries, max_size=6))
def test_affinity_record_survives_the_client_state(record: dict[str, AffinityEntry]) -> None:
    state = RecordDict()
    save_record(state, record)
    assert load_record(state) == record


@given(st.lists(st.integers(0, 10), max_size=5), st.integers(2, 4))
def test_leaves_from_the_split_history_match_the_tree(picks: list[int], k: int) -> None:
    """Any party rebuilds the server's leaves from the ordered split parents alone."""
    tree = CohortTree(max_leaves=100)
    for pick in picks:
        leaves = tree.leaves()
        tree.split(leaves[pick % len(leaves)], k, 0)
    splits = decode_splits(encode_splits(s.parent for s in tree.splits))
    assert leaves_of(splits, k) == tree.leaves()
    assert len(leaves_of(splits, k)) == 1 + (k - 1) * len(picks)


def test_catch_up_inherits_once_with_the_label_bonus() -> None:
    params = AuxoParams()
    record = {"0": AffinityEntry(0.3, 1, True)}
    leaves = catch_up(record, ["0", "0.1"], params)
    assert leaves == ["0.0", "0.1.0", "0.1.1"]
    assert record["0.1"].reward == pytest.approx(0.3 + params.split_bonus)  # label 1 matched
    assert record["0.0"].reward == pytest.approx(0.3)
    assert record["0.1.0"].reward == pytest.approx(record["0.1"].reward)  # "0.1" had no label
    before = {c: (e.reward, e.label, e.explored) for c, e in record.items()}
    catch_up(record, ["0", "0.1"], params)  # hearing of the same splits again changes nothing
    assert {c: (e.reward, e.label, e.explored) for c, e in record.items()} == before


def test_split_history_rejects_a_split_of_a_non_leaf() -> None:
    with pytest.raises(ValueError, match="not a leaf"):
        leaves_of(["0", "0"], 2)


def test_parameters_flatten_and_come_back_with_keys_shapes_and_dtypes() -> None:
    rng = np.random.default_rng(0)
    like = ArrayRecord([rng.normal(size=(3, 4)), rng.normal(size=5).astype(np.float32)])
    flat = flatten(like)
    assert flat.shape == (17,)
    back = unflatten_like(flat, like)
    assert list(back.keys()) == list(like.keys())
    for a, b in zip(back.to_numpy_ndarrays(), like.to_numpy_ndarrays(), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="values"):
        unflatten_like(np.zeros(18), like)


def test_cohort_grid_lists_only_its_nodes_and_refuses_others() -> None:
    view = CohortGrid(inner=None, node_ids=[7, 3])  # type: ignore[arg-type]
    assert sorted(view.get_node_ids()) == [3, 7]
    assert sorted(n.node_id for n in view.get_nodes()) == [3, 7]
    with pytest.raises(ValueError, match="not in this cohort's view"):
        view.create_message(RecordDict(), "train", 8, "1")
