"""`kairos orloj calibrate | serve | loadgen` end to end on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

import kairos.runtime.http as http_module
from kairos.decisions import read_log
from kairos.orloj.decisions import CODEC
from kairos.orloj.runtime.cli import register
from kairos.runtime.http import BackgroundServer

runner = CliRunner(env={"COLUMNS": "200"})
TINY = ["--model", "early-exit", "--model-option", "stage_blocks=[1,2,2,3]", "--sizes", "1,2,4"]


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    group = typer.Typer()
    register(group)
    return group


def test_calibrate_then_serve_then_loadgen(
    cli: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cal = tmp_path / "cal.json"
    done = runner.invoke(cli, ["calibrate", *TINY, "--quick", "--out", str(cal)])
    assert done.exit_code == 0, done.output
    assert cal.is_file() and "within" in done.output and "saved" in done.output
    assert len(done.output.splitlines()) < 20  # a summary, not the file's JSON

    seen: dict[str, Any] = {}

    def fake_run_server(app: Any, host: str, port: int, log_level: str, **kw: Any) -> None:
        """Instead of serving forever: serve on a free port, run the load generator against it
        through the CLI, then return (which is what Ctrl-C does)."""
        with BackgroundServer(app) as srv:
            seen["health"] = httpx.get(srv.url + "/health").json()
            out = tmp_path / "load"
            seen["loadgen"] = runner.invoke(
                cli,
                [
                    "loadgen",
                    *TINY[:4],
                    "--url",
                    srv.url,
                    "--calibration",
                    str(cal),
                    "--requests",
                    "30",
                    "--rate-rps",
                    "40",
                    "--slo-ms",
                    "2000",
                    "--out",
                    str(out),
                    "--save-trace",
                    str(tmp_path / "trace.jsonl"),
                ],
            )
            seen["stats"] = httpx.get(srv.url + "/v1/stats").json()

    monkeypatch.setattr(http_module, "run_server", fake_run_server)
    log = tmp_path / "decisions.jsonl"
    serve = ["serve", "--policy", "orloj", *TINY, "--calibration", str(cal), "--worker", "thread"]
    served = runner.invoke(cli, [*serve, "--decision-log", str(log)])
    assert served.exit_code == 0, served.output
    assert seen["health"] == {"status": "ok", "policy": "orloj", "restarts": 0}
    load = seen["loadgen"]
    assert load.exit_code == 0, load.output
    assert "finish_rate" in load.output
    assert seen["stats"]["ended"] == 30 and seen["stats"]["finish_rate"] > 0.5
    result = json.loads((tmp_path / "load" / "loadgen.json").read_text())
    assert result["summary"]["requests"] == 30 and len(result["rows"]) == 30
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    assert len(lines) == 30 and set(json.loads(lines[0])) == {
        "arrival_ms",
        "app",
        "input",
        "slo_ms",
    }
    # every request the server took was decided once, in the log: run in a batch or dropped
    decisions = read_log(log, CODEC, system="orloj")
    assert decisions.meta["policy"] == "orloj" and decisions.meta["run"] == "serve"
    decided = [i for e in decisions.entries for i in e.record.ids]
    assert len(decided) == len(set(decided)) == 30


def test_bad_options_are_named(cli: typer.Typer, tmp_path: Path) -> None:
    bad_model = runner.invoke(cli, ["calibrate", "--model", "resnet", "--out", str(tmp_path / "c")])
    assert bad_model.exit_code == 2 and "--model must be one of" in bad_model.output
    apps = tmp_path / "apps.json"
    apps.write_text(json.dumps({"a": ["exit9"]}))
    bad_apps = runner.invoke(cli, ["loadgen", *TINY[:4], "--apps", str(apps), "--requests", "1"])
    assert bad_apps.exit_code == 2 and "unknown input classes" in bad_apps.output
    bad_policy = runner.invoke(
        cli, ["serve", "--policy", "fifo", *TINY, "--quick", "--worker", "thread"]
    )
    assert bad_policy.exit_code == 2 and "unknown system" in bad_policy.output
    (tmp_path / "file").write_text("")
    bad_log = runner.invoke(
        cli,
        ["serve", *TINY, "--quick", "--worker", "thread", "--decision-log", f"{tmp_path}/file/x"],
    )
    assert bad_log.exit_code == 2 and "cannot write the decision log" in bad_log.output


def test_loadgen_reads_a_calibration_it_never_writes(cli: typer.Typer, tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    gone = runner.invoke(cli, ["loadgen", *TINY[:4], "--calibration", str(missing)])
    assert gone.exit_code == 2 and "no calibration file at" in gone.output, gone.output
    assert not missing.exists()
    helptext = " ".join(runner.invoke(cli, ["loadgen", "--help"]).output.split())
    assert "must exist" in helptext and "measured + saved" not in helptext, helptext
