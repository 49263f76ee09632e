from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kairos.cli import app

runner = CliRunner(env={"COLUMNS": "200"})


def test_experiments_are_listed() -> None:
    result = runner.invoke(app, ["andes", "experiments"])
    assert result.exit_code == 0
    for name in ("e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11", "capacity"):
        assert name in result.output.split()


def test_simulate_writes_results_for_a_small_workload(tmp_path: Path) -> None:
    args = [
        "andes",
        "simulate",
        "--policy",
        "andes",
        "--span",
        "120",
        "--intensity",
        "2.5",
        "--andes",
        "horizon_s=5",
        "--out",
        str(tmp_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "simulate_andes.json").read_text())
    assert data["summary"]["requests"] == len(data["rows"]) > 0
    assert 0.0 <= data["summary"]["avg_qoe"] <= 1.0
    assert (tmp_path / "simulate_andes_queue.png").is_file()


def test_simulate_replays_a_trace(tmp_path: Path, data_dir: Path) -> None:
    trace = tmp_path / "t.csv"
    rows = (data_dir / "azure_llm_conv_1h.csv").read_text().splitlines()[:41]
    trace.write_text("\n".join(rows) + "\n")
    result = runner.invoke(
        app,
        ["andes", "simulate", "--policy", "fcfs", "--trace", str(trace), "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "simulate_fcfs.json").read_text())["summary"]["requests"] == 40


def test_bad_input_gets_a_clear_error(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["andes", "simulate", "--policy", "robin", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown policy 'robin'" in bad.output
    shape = runner.invoke(
        app, ["andes", "simulate", "--intensity", "3", "--duration", "0.4", "--out", str(tmp_path)]
    )
    assert shape.exit_code == 2 and "intensity*duration" in shape.output
    exp = runner.invoke(app, ["andes", "experiment", "e99"])
    assert exp.exit_code != 0 and "no experiment 'e99'" in exp.output


def test_profile_measures_the_cache_shape_it_is_given(tmp_path: Path) -> None:
    from kairos.andes.latency import LinearProfile, load_profile

    out = tmp_path / "p.json"
    args = ["andes", "profile", "--quick", "--num-gpu-blocks", "64", "--max-model-len", "1024"]
    # the random built-in model: the same engine, no training first
    result = runner.invoke(app, [*args, "--model", "kairos-tiny-llama-random", "--out", str(out)])
    assert result.exit_code == 0, result.output
    prof = load_profile(str(out))
    assert isinstance(prof, LinearProfile)
    assert prof.kv_capacity == 64 * 16 and prof.regather_s_per_token >= 0
    assert "mean relative fit error" in result.output
    bad = runner.invoke(app, [*args[:4], "4", "--max-model-len", "1024", "--out", str(out)])
    assert bad.exit_code == 2 and "max_model_len=1024 exceeds the KV cache" in bad.output
