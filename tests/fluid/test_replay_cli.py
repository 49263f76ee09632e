"""`kairos fluid replay` on a decision log: the same decisions say so, another configuration
is reported with its first differing decision (exit 1), a broken log is named (exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kairos.cli import app
from kairos.decisions import DecisionLog
from kairos.fluid.backend import Outcome
from kairos.fluid.core.placement import Placement
from kairos.fluid.decisions import CODEC
from kairos.fluid.driver import Driver
from kairos.fluid.runtime.cli import OPTIONS, tuning
from kairos.fluid.trial import Trial
from kairos.sim import EventLoop, SimClock

META: dict[str, Any] = dict(zip(OPTIONS, ("random", 3, 4, 2, 2, 2, False, 0.2, 0), strict=True))


class Steady:
    """A stand-in for the worker processes: 0.2 s alone, 0.25 s sharing a device, and a metric
    that grows with the trial's progress and its first coordinate."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock

    def run_iteration(self, trial: Trial, on_done: Callable[[Outcome], None]) -> None:
        duration = 0.25 if trial.width < 1 else 0.2
        metric = trial.spec.config["x0"] * (trial.done + 1)
        self.clock.call_at(self.clock.now() + duration, on_done, Outcome(duration, metric))

    def resize(self, trial: Trial, old: Placement, on_ready: Callable[[], None]) -> None:
        self.clock.call_at(self.clock.now() + 0.05, on_ready)

    def release(self, trial: Trial) -> None:
        pass


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "decisions.jsonl"
    tuner, config = tuning(META)
    loop = EventLoop()
    clock = SimClock(loop)
    with DecisionLog(path, CODEC, "fluid", META) as log:
        driver = Driver(clock, Steady(clock), META["devices"], config, tuner, recorder=log)
        loop.call_at(0.0, driver.start)
        loop.run()
        assert log.count > 10
    return path


def test_replaying_a_log_under_its_own_configuration_finds_no_difference(log_path: Path) -> None:
    result = CliRunner().invoke(app, ["fluid", "replay", str(log_path)])
    assert result.exit_code == 0, result.output
    assert "made the same" in result.output


def test_replaying_under_the_baseline_reports_the_first_difference(log_path: Path) -> None:
    result = CliRunner().invoke(app, ["fluid", "replay", str(log_path), "--baseline"])
    assert result.exit_code == 1, result.output
    assert "decision 0 differs" in result.output and "Launch" in result.output


def test_a_broken_log_is_named_with_its_line(log_path: Path) -> None:
    lines = log_path.read_text().splitlines()
    lines[3] = '{"t": 1.0, "kind": "Launch", "record": {"trial": "t0"}}'
    log_path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["fluid", "replay", str(log_path)])
    assert result.exit_code == 2
    flat = "".join(result.output.replace("│", "").split())  # as the error box wraps it
    assert "decisions.jsonl:4:amalformedLaunch" in flat, result.output


def test_run_names_an_unknown_tuner_and_an_unwritable_log_before_starting(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    runner = CliRunner()
    bad_tuner = runner.invoke(app, ["fluid", "run", "--tuner", "nope"])
    assert bad_tuner.exit_code == 2
    assert "notuner'nope'" in "".join(bad_tuner.output.replace("│", "").split())
    bad_log = runner.invoke(
        app, ["fluid", "run", "--decision-log", str(blocker / "decisions.jsonl")]
    )
    assert bad_log.exit_code == 2
    flat = "".join(bad_log.output.replace("│", "").split())
    assert "cannotwritethedecisionlog" in flat and "a-file" in flat, bad_log.output
