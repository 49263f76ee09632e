"""The workload catalogue (the shared CSV plus stated assumptions) and E1 traces: clear errors
for broken input, seeded generation, CSV round trips."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kairos.salus.catalog import load_workloads, measured
from kairos.salus.profile import GIB, Profile, ProfileError
from kairos.salus.workloads import E1Trace, e1_trace, read_trace, write_trace


def test_the_45_workloads_33_measured() -> None:
    w = load_workloads()
    assert len(w) == 45 and sum(p.source == "csv" for p in w.values()) == 33
    r = w["resnet50_50"]  # 10-min row: 622.487 s / 2665 iterations
    assert r.t_iter == pytest.approx(622.487 / 2665)
    assert r.peak == round(4008.2 * 2**20) and r.busy == 1.0


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("vgg11_25_10min,abc,3709.6,5659", "row 1: column 'jct_s': 'abc' is not a float"),
        ("vgg11_25_10min,606.4,,5659", "row 1: column 'peak_mem_mb': missing value"),
        ("vgg11_25_10min,606.4,3709.6,-3", "row 1: column 'iterations': '-3' must be"),
        ("vgg11-25,606.4,3709.6,5659", "row 1: column 'workload'"),
    ],
)
def test_broken_profiles_name_file_row_and_column(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "w.csv"
    path.write_text("workload,jct_s,peak_mem_mb,iterations\n" + line + "\n")
    with pytest.raises(ProfileError, match=match) as err:
        measured(path)
    assert str(path) in str(err.value)


def test_a_missing_file_says_how_to_point_at_it(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="KAIROS_SHARED"):
        measured(tmp_path / "absent.csv")


def test_margins_inflate_p_and_the_total_capped_at_c() -> None:
    p = Profile("w", 100, 900, 1.0).with_margins(0.10, 0.05)
    assert (p.persistent, p.peak) == (110, 1050)
    assert Profile("w", 100, 900, 1.0).with_margins(capacity=1000).peak == 1000


def test_e1_trace_is_seeded_and_shaped() -> None:
    w = load_workloads()
    cfg = E1Trace()
    a, b, c = e1_trace(cfg, w, 3), e1_trace(cfg, w, 3), e1_trace(cfg, w, 4)
    assert a == b and a != c and len(a) == 100
    assert all(w[j.workload].source == "csv" and w[j.workload].peak <= 16 * GIB for j in a)
    gaps = [y.submit_time - x.submit_time for x, y in itertools.pairwise(a)]
    assert 9 < sum(gaps) / len(gaps) < 30  # Poisson, mean 18 s
    minutes = [round(j.duration / 60) for j in a]
    assert set(minutes) <= {1, 5, 30} and minutes.count(1) > 60
    bursty = e1_trace(E1Trace(bursty=True), w, 3)
    assert [j.submit_time for j in bursty] != [j.submit_time for j in a]


def test_trace_csv_round_trip_and_errors(tmp_path: Path) -> None:
    w = load_workloads()
    trace = e1_trace(E1Trace(jobs=20), w, 1)
    path = tmp_path / "t.csv"
    write_trace(path, trace)
    assert read_trace(path, w) == trace
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace(trace[2].workload, "nosuch_1")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProfileError, match="row 3: column 'model_name': unknown 'nosuch_1'"):
        read_trace(path, w)
    with pytest.raises(ValueError, match="sum to 1"):
        E1Trace(probabilities=(0.5, 0.2, 0.2))
