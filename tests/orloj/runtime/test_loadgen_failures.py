"""loadgen fails loudly: no server, a bad `--calibration` path, and a replayed
`--trace` recorded as what it is, not as the generator's defaults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kairos.orloj.runtime.calibrate import CalibrationConfig
from kairos.orloj.runtime.cli import register
from kairos.orloj.runtime.dispatcher import Dispatcher
from kairos.orloj.runtime.executor import ThreadExecutor
from kairos.orloj.runtime.loadgen import LoadReport, Reply, TraceItem, save_trace
from kairos.orloj.runtime.models import EarlyExitCNN
from kairos.orloj.runtime.server import create_app
from kairos.orloj.systems import make_system
from kairos.runtime.http import BackgroundServer
from kairos.runtime.ports import free_port

runner = CliRunner(env={"COLUMNS": "200"})
MODEL = ["--model", "early-exit", "--model-option", "stage_blocks=[1,1,1,1]"]
LOAD = ["--slo-ms", "2000", "--rate-rps", "50", "--requests", "5"]


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    group = typer.Typer()
    register(group)
    return group


@pytest.fixture(scope="module")
def cal(cli: typer.Typer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cal") / "cal.json"
    done = runner.invoke(
        cli, ["calibrate", *MODEL, "--sizes", "1,2", "--quick", "--out", str(path)]
    )
    assert done.exit_code == 0, done.output
    return path


def test_no_server_exits_non_zero_with_one_clear_line(cli: typer.Typer, cal: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = runner.invoke(cli, ["loadgen", *MODEL, "--url", url, "--calibration", str(cal), *LOAD])
    assert done.exit_code == 1, done.output
    assert f"loadgen: cannot reach the server at {url}" in done.output
    assert "finish_rate" not in done.output  # no report of a run that never happened


def test_a_missing_calibration_file_is_an_error_naming_the_path(
    cli: typer.Typer, tmp_path: Path
) -> None:
    missing = tmp_path / "typo-cal.json"
    done = runner.invoke(cli, ["loadgen", *MODEL, "--calibration", str(missing), *LOAD])
    assert done.exit_code == 2, done.output
    assert str(missing) in done.output.replace("\n", "") and "calibrating" not in done.output
    assert not missing.exists()  # nothing measured and saved in its place


def test_an_unreadable_calibration_file_is_an_error_naming_the_path(
    cli: typer.Typer, tmp_path: Path
) -> None:
    garbage = tmp_path / "cal.json"
    garbage.write_text("{not json")
    done = runner.invoke(cli, ["loadgen", *MODEL, "--calibration", str(garbage), *LOAD])
    assert done.exit_code == 2, done.output
    assert "cannot read the calibration" in done.output and "calibrating" not in done.output


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    model = EarlyExitCNN(stage_blocks=(1, 1, 1, 1))
    worker = ThreadExecutor(model, warm_sizes=(1, 2))
    measured = worker.calibrate(CalibrationConfig(batch_sizes=(1, 2), solo_runs=3, batch_reps=1))
    policy = make_system("clipper", model=measured.batch_model, slo_ms=2000.0, sizes=(1, 2))
    d = Dispatcher(policy, model, worker)
    with BackgroundServer(create_app(d, model.default_apps())) as srv:
        yield srv.url


def test_a_replayed_trace_records_its_own_rate_seed_and_path(
    cli: typer.Typer, cal: Path, server_url: str, tmp_path: Path
) -> None:
    # 6 requests 40 ms apart: 25 per second, whatever --rate-rps and --seed say
    items = [TraceItem(40.0 * i, "easy", {"exit": 1, "seed": i}) for i in range(6)]
    trace = save_trace(items, tmp_path / "trace.jsonl")
    out = tmp_path / "load"
    args = [
        "--url",
        server_url,
        "--calibration",
        str(cal),
        "--trace",
        str(trace),
        "--out",
        str(out),
    ]
    done = runner.invoke(cli, ["loadgen", *MODEL, *args, *LOAD, "--seed", "7"])
    assert done.exit_code == 0, done.output
    config = json.loads((out / "loadgen.json").read_text())["config"]
    assert config["rate_rps"] == pytest.approx(25.0)
    assert config["seed"] is None and config["trace"] == str(trace)


def test_a_run_whose_every_request_failed_in_transport_is_flagged() -> None:
    lost = Reply("a", 0, "error", 1.0, None, 0, 0.0)
    served = Reply("a", 200, "ok", 1.0, 1.0, 1, 0.0)
    assert LoadReport([lost, lost], 1.0).all_failed_in_transport
    assert not LoadReport([lost, served], 1.0).all_failed_in_transport
    assert not LoadReport([], 1.0).all_failed_in_transport
