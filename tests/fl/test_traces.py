"""FedScale-style availability and capacity traces: JSON and CSV, with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kairos.fl import read_availability_trace, read_capacity_trace
from kairos.workloads import TraceFormatError


def _write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path


def test_json_and_csv_availability_give_the_same_windows(tmp_path: Path) -> None:
    data = {
        "7": {"active": [10, 500], "inactive": [100, 900], "finish_time": 1000, "model": "x"},
        "3": {"active": [50], "inactive": [60], "finish_time": 1000},
    }
    js = read_availability_trace(_write_json(tmp_path / "a.json", data))
    csv = tmp_path / "a.csv"
    csv.write_text(
        "client_id,active,inactive,finish_time\n7,10,100,1000\n7,500,900,1000\n3,50,60,1000\n"
    )
    cs = read_availability_trace(csv)
    for tr in (js, cs):
        assert tr.client_ids == ("7", "3") and tr.period == 1000
        w = tr.windows
        assert w.start.tolist() == [10, 50, 500] and w.end.tolist() == [100, 60, 900]
        assert [tr.client_ids[d] for d in w.device] == ["7", "3", "7"]
    source = js.source(stretch_s=80)
    second = source.chunk(1)  # replayed a period later, windows stretched by 80 s
    assert second.start.tolist() == [1010, 1050, 1500]
    assert second.end.tolist() == [1180, 1140, 1980]


@pytest.mark.parametrize(
    ("record", "field", "needle"),
    [
        ({"active": [10], "inactive": [5]}, "inactive[0]", "before it starts"),
        ({"active": [10, 20], "inactive": [30, 40]}, "active[1]", "overlaps"),
        ({"active": [10], "inactive": ["soon"]}, "inactive[0]", "'soon'"),
        ({"active": [10], "inactive": [20, 30]}, "inactive", "1 starts, 2 ends"),
        ({"active": 10, "inactive": [20]}, "active", "expected a list"),
    ],
)
def test_bad_json_availability_names_client_line_and_field(
    tmp_path: Path, record: dict[str, object], field: str, needle: str
) -> None:
    path = _write_json(tmp_path / "bad.json", {"1": {"active": [0], "inactive": [1]}, "2": record})
    with pytest.raises(TraceFormatError) as err:
        read_availability_trace(path)
    assert err.value.column == field and needle in str(err.value)
    assert err.value.line > 1 and "'2'" in str(err.value)  # the second client's record


def test_bad_csv_availability_names_the_line(tmp_path: Path) -> None:
    csv = tmp_path / "a.csv"
    csv.write_text("client_id,active,inactive\n1,0,10\n1,5,20\n")
    with pytest.raises(TraceFormatError) as err:
        read_availability_trace(csv)
    assert err.value.line == 3 and err.value.column == "active"
    csv.write_text("client_id,active\n1,0\n")
    with pytest.raises(TraceFormatError, match="missing column"):
        read_availability_trace(csv)
    bad = tmp_path / "broken.json"
    bad.write_text('{"1": {"active": [0],\n "inactive": [1]')
    with pytest.raises(TraceFormatError, match="invalid JSON") as err2:
        read_availability_trace(bad)
    assert err2.value.line == 2


def test_capacity_trace_normalises_by_the_mean(tmp_path: Path) -> None:
    path = _write_json(
        tmp_path / "cap.json",
        {
            "1": {"computation": 100.0, "communication": 500.0},
            "2": {"computation": 300.0, "communication": 1500.0},
        },
    )
    cap = read_capacity_trace(path)
    slow, bw = cap.factors()
    assert np.allclose(slow, [0.5, 1.5]) and np.allclose(bw, [0.5, 1.5])
    csv = tmp_path / "cap.csv"
    csv.write_text("client_id,computation,communication\n1,100,500\n2,0,10\n")
    with pytest.raises(TraceFormatError) as err:
        read_capacity_trace(csv)
    assert err.value.line == 3 and err.value.column == "computation"
