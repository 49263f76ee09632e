"""The shared decision-record layer: plainness, the JSON codec, the log file and the replay
comparison, each shown to catch what it exists to catch."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.decisions import (
    Codec,
    DecisionLog,
    DecisionLogError,
    Entries,
    Entry,
    altered,
    first_divergence,
    is_plain,
    read_log,
)


@dataclass(frozen=True)
class Step:
    request: str
    tokens: int


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    preempted: tuple[str, ...] = ()
    budget: dict[str, int] = field(default_factory=dict)
    note: str | None = None


@dataclass
class Mutable:
    x: int


class Live:
    pass


CODEC = Codec([Step, Plan])

steps = st.builds(Step, st.text(max_size=8), st.integers(-(2**40), 2**40))
plans = st.builds(
    Plan,
    st.lists(steps, max_size=5).map(tuple),
    st.lists(st.text(max_size=5), max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=4), st.integers(0, 10**6), max_size=3),
    st.none() | st.text(max_size=10),
)
times = st.floats(0, 1e9, allow_nan=False)


@given(times, plans)
def test_a_record_survives_json_unchanged(t: float, plan: Plan) -> None:
    assert is_plain(plan)
    back = CODEC.loads(CODEC.dumps(Entry(t, plan)))
    assert back == Entry(t, plan)
    assert isinstance(back.record.steps, tuple)


def test_live_objects_and_mutable_records_are_not_plain() -> None:
    assert not is_plain(Plan((Step("a", 1),), note=Live()))  # type: ignore[arg-type]
    assert not is_plain(Mutable(1))
    assert not is_plain({1: "non-string key"})
    assert not is_plain(float("nan"))
    assert not is_plain(Step)  # a class is not a record
    assert is_plain(Plan((Step("a", 1),), ("b",), {"c": 2}))


def test_the_codec_refuses_unknown_kinds_and_malformed_records() -> None:
    with pytest.raises(TypeError, match="Mutable is not one of"):
        CODEC.encode(Entry(0.0, Mutable(1)))
    with pytest.raises(ValueError, match="unknown record kind 'Nope'"):
        CODEC.decode({"t": 0, "kind": "Nope", "record": {}})
    with pytest.raises(ValueError, match="a malformed Step"):
        CODEC.decode({"t": 0, "kind": "Step", "record": {"request": "a", "tokens": "many"}})
    with pytest.raises(ValueError, match="not a finite number"):
        CODEC.decode({"t": "soon", "kind": "Step", "record": {"request": "a", "tokens": 1}})
    with pytest.raises(ValueError, match="two record types named Step"):
        Codec([Step, Step])


def test_a_log_reads_back_what_was_written(tmp_path: Path) -> None:
    entries = [Entry(0.5, Step("a", 3)), Entry(1.25, Plan((Step("b", 1),), ("a",)))]
    path = tmp_path / "d" / "log.jsonl"
    with DecisionLog(path, CODEC, "demo", {"seed": 7}) as log:
        for e in entries:
            log.record(e.t, e.record)
    loaded = read_log(path, CODEC, system="demo")
    assert (loaded.system, loaded.meta, loaded.entries) == ("demo", {"seed": 7}, entries)
    with pytest.raises(DecisionLogError, match="of 'demo', not of 'other'"):
        read_log(path, CODEC, system="other")


def test_a_killed_runs_log_keeps_every_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = DecisionLog(path, CODEC, "demo")
    log.record(0.0, Step("a", 1))
    log.record(1.0, Step("b", 2))
    # line-buffered: both lines are on disk before close
    assert len(path.read_text().splitlines()) == 3
    path.write_text(path.read_text() + '{"t": 2.0, "kind": "St')  # the write cut short
    assert [e.record.request for e in read_log(path, CODEC).entries] == ["a", "b"]
    log.close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty, not a decision log"),
        ('{"something": "else"}\n', ":1: not a kairos decision log"),
        (
            '{"kairos_decision_log": 1, "system": "demo"}\nnot json\n{"t":0}\n',
            ":2: not JSON",
        ),
        (
            '{"kairos_decision_log": 1, "system": "demo"}\n{"t": 0, "kind": "Step"}\n',
            ':2: an entry is an object with "t", "kind" and "record"',
        ),
    ],
)
def test_a_broken_log_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(text)
    with pytest.raises(DecisionLogError, match=message):
        read_log(path, CODEC)


def test_the_header_is_json_with_the_format_version(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    DecisionLog(path, CODEC, "demo").close()
    assert json.loads(path.read_text()) == {
        "kairos_decision_log": 1,
        "system": "demo",
        "meta": {},
    }


@given(st.lists(st.tuples(times, steps), min_size=1, max_size=20), st.data())
def test_an_altered_decision_is_the_first_divergence(
    raw: list[tuple[float, Step]], data: st.DataObject
) -> None:
    entries = [Entry(t, s) for t, s in raw]
    assert first_divergence(entries, list(entries)) is None
    i = data.draw(st.integers(0, len(entries) - 1))
    mutant = altered(entries, i, tokens=entries[i].record.tokens + 1)
    found = first_divergence(entries, mutant)
    assert found is not None and found.index == i
    assert found.recorded == entries[i] and found.replayed == mutant[i]


def test_a_missing_decision_and_a_late_one_are_divergences() -> None:
    rec = Entries()
    rec.record(0.0, Step("a", 1))
    rec.record(1.0, Step("b", 1))
    short = first_divergence(rec, rec[:1])
    assert short is not None and short.index == 1 and short.replayed is None
    assert "the run ended" in str(short)
    late = [rec[0], Entry(1.0 + 1e-6, rec[1].record)]
    assert first_divergence(rec, late) is not None
    assert first_divergence(rec, late, time_tol=1e-3) is None
    assert first_divergence(rec, late, time_tol=None) is None


def test_an_alteration_that_changes_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="leave decision 0 as it was"):
        altered([Entry(0.0, Step("a", 1))], 0, tokens=1)


def test_a_path_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(DecisionLogError, match=r"cannot write the decision log .*a-file"):
        DecisionLog(blocker / "log.jsonl", CODEC, "demo")
