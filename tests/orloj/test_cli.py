"""`kairos orloj simulate` and `kairos orloj workloads`, on a group built as `kairos.cli` does."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from kairos.cli import system_group
from kairos.orloj.cli import register
from kairos.orloj.recording import Recording


def orloj_app() -> typer.Typer:
    group = system_group("orloj")
    register(group)
    app = typer.Typer()
    app.add_typer(group, name="orloj")
    return app


def test_simulate_saves_a_recording_that_replays_for_another_system(tmp_path: Path) -> None:
    runner = CliRunner()
    rec = tmp_path / "rec.csv"
    args = ["orloj", "simulate", "--system", "clockwork", "--workload", "std-1"]
    first = runner.invoke(orloj_app(), [*args, "--requests", "300", "--save-recording", str(rec)])
    assert first.exit_code == 0, first.output
    assert "finish_rate" in first.output and len(Recording.load_csv(rec)) == 300
    replay = ["orloj", "simulate", "--system", "nexus", "--recording", str(rec)]
    second = runner.invoke(orloj_app(), replay)
    assert second.exit_code == 0, second.output
    assert re.search(r"requests\s*│\s*300\s", second.output), second.output


def test_simulate_names_a_bad_workload_and_a_bad_option() -> None:
    runner = CliRunner()
    bad = runner.invoke(orloj_app(), ["orloj", "simulate", "--workload", "nine-modal"])
    assert bad.exit_code == 2 and "unknown workload" in bad.output
    opt = runner.invoke(
        orloj_app(),
        ["orloj", "simulate", "--system", "nexus", "--requests", "10", "--option", "nope=1"],
    )
    assert opt.exit_code == 2 and "bad options for nexus" in opt.output


def test_workloads_lists_every_paper_case() -> None:
    out = CliRunner().invoke(orloj_app(), ["orloj", "workloads"])
    assert out.exit_code == 0
    for name in ("std-0.5/2", "eight-modal", "mbart-wmt", "resnet-imagenet"):
        assert name in out.output
