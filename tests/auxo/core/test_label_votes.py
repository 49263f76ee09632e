"""Label voting (spec 3.2, the authors' R code): labels follow the majority of assignments."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo import AuxoParams
from kairos.auxo.rewards import AffinityEntry, apply_feedback, vote

VOTING = AuxoParams(label_votes=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=40))
def test_the_voted_label_is_the_one_assigned_most_net_of_the_other(labels: list[int]) -> None:
    entry = AffinityEntry()
    out = [vote(entry, lab, VOTING) for lab in labels]
    ones = sum(labels)
    zeros = len(labels) - ones
    assert entry.votes == [zeros - ones, ones - zeros]
    if ones != zeros:
        assert out[-1] == int(ones > zeros)
    else:
        assert out[-1] == labels[-1]  # a tie keeps the newest assignment


def test_one_contrary_round_does_not_move_a_settled_label() -> None:
    rec: dict[str, AffinityEntry] = {}
    for lab in (1, 1, 0):
        apply_feedback(rec, "0", None, lab, ["0"], VOTING)
    assert rec["0"].label == 1
    plain: dict[str, AffinityEntry] = {}
    for lab in (1, 1, 0):
        apply_feedback(plain, "0", None, lab, ["0"], AuxoParams())
    assert plain["0"].label == 0 and plain["0"].votes is None
