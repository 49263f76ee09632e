from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kairos.workloads import (
    EmpiricalLengths,
    LognormalLengths,
    TraceFormatError,
    dataset_lengths,
    read_azure_csv,
    read_burstgpt_csv,
    read_trace,
)
from kairos.workloads.describe import describe, rate_per_minute


def test_azure_conversation_trace_loads_as_19366_requests(data_dir: Path) -> None:
    trace = read_azure_csv(data_dir / "azure_llm_conv_1h.csv")
    assert len(trace) == 19366
    assert np.all(np.diff(trace.arrivals) >= 0)
    assert trace.prompt_tokens.mean() == pytest.approx(1155, rel=0.01)
    assert trace.output_tokens.mean() == pytest.approx(211, rel=0.01)
    assert 5.0 < trace.mean_rate < 6.0
    assert read_trace(data_dir / "azure_llm_conv_1h.csv").meta["format"] == "azure"


def test_malformed_csv_names_the_line_and_the_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,5\n1.0,12,abc\n")
    with pytest.raises(TraceFormatError) as err:
        read_azure_csv(bad)
    assert err.value.line == 3 and err.value.column == "num_decode_tokens"
    assert "line 3" in str(err.value) and "'abc'" in str(err.value)


@pytest.mark.parametrize(
    ("body", "line", "column"),
    [
        ("0.0,10,5\n-1,3,3\n", 3, "arrived_at"),
        ("0.0,10.5,5\n", 2, "num_prefill_tokens"),
        ("0.0,10\n", 2, None),
        ("0.0,nan,4\n", 2, "num_prefill_tokens"),
    ],
)
def test_every_bad_row_kind_is_reported(
    tmp_path: Path, body: str, line: int, column: str | None
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + body)
    with pytest.raises(TraceFormatError) as err:
        read_azure_csv(path)
    assert (err.value.line, err.value.column) == (line, column)


def test_missing_column_and_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("arrived_at,num_prefill_tokens\n0,1\n")
    with pytest.raises(TraceFormatError, match="num_decode_tokens"):
        read_azure_csv(path)
    with pytest.raises(TraceFormatError, match="unknown trace format"):
        read_trace(path)
    with pytest.raises(FileNotFoundError):
        read_trace(tmp_path / "nope.csv")


def test_burstgpt_reader_filters_and_rebases(tmp_path: Path) -> None:
    path = tmp_path / "burst.csv"
    path.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "7,GPT-4,1087,0,1087,API log\n"
        "9,ChatGPT,300,200,500,API log\n"
    )
    full = read_burstgpt_csv(path)
    assert len(full) == 3 and full.arrivals[0] == 0.0
    chat = read_burstgpt_csv(path, model="ChatGPT")
    assert chat.prompt_tokens.tolist() == [472, 300]
    assert chat.arrivals.tolist() == [0.0, 4.0]
    assert len(read_burstgpt_csv(path, log_type="API log")) == 2
    assert read_trace(path).meta["format"] == "burstgpt"
    path.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,x,1,1,API log\n"
    )
    with pytest.raises(TraceFormatError, match="Request tokens"):
        read_burstgpt_csv(path)


def test_trace_rescaling_hits_the_target_rate(data_dir: Path) -> None:
    trace = read_azure_csv(data_dir / "azure_llm_conv_1h.csv")
    assert trace.with_rate(2.0).mean_rate == pytest.approx(2.0)
    part = trace.window(600, 1200)
    assert part.arrivals.min() >= 0 and part.arrivals.max() < 600
    minutes, rates = rate_per_minute(trace)
    assert round(rates.sum() * 60) == len(trace) and minutes.size == 59


def test_lognormal_lengths_match_the_published_moments() -> None:
    dist = LognormalLengths(1000.0, 500.0, 200.0, 100.0)
    p, o = dist.sample(200_000, np.random.default_rng(0))
    assert p.mean() == pytest.approx(1000, rel=0.02) and p.std() == pytest.approx(500, rel=0.05)
    assert o.mean() == pytest.approx(200, rel=0.02) and o.min() >= 1
    capped = dataset_lengths("sharegpt", max_prompt=4096).sample(1000, np.random.default_rng(0))[0]
    assert capped.max() <= 4096
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_lengths("imagenet")


def test_empirical_lengths_resample_real_pairs(data_dir: Path) -> None:
    dist = EmpiricalLengths.from_csv(data_dir / "arxiv_summarization_lengths.csv")
    assert len(dist.prompt) == 28257
    p, o = dist.sample(5000, np.random.default_rng(0))
    pairs = set(zip(dist.prompt.tolist(), np.maximum(dist.output, 1).tolist(), strict=True))
    assert all((a, b) in pairs for a, b in zip(p.tolist(), o.tolist(), strict=True))


def test_describe_writes_a_plot(data_dir: Path, tmp_path: Path) -> None:
    info = describe(read_azure_csv(data_dir / "azure_llm_conv_1h.csv"), tmp_path / "rate.png")
    assert info["requests"] == 19366
    assert (tmp_path / "rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert info["peak_minute_rate"] > info["mean_rate"]
