"""Progress off a terminal: plain lines on stderr, so a piped or logged run is never silent."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import kairos.experiments.progress as progress_module
from kairos.experiments.progress import progress
from kairos.experiments.sweep import Sweep


class Point(BaseModel):
    x: int = 0


def square(cfg: Point) -> dict[str, int]:
    return {"y": cfg.x * cfg.x}


def test_a_sweep_off_a_terminal_says_each_point_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "EVERY_S", 0.0)
    Sweep(square, Point(), [{"x": i} for i in range(3)], description="squares").run()
    out, err = capsys.readouterr()
    assert out == ""
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        f"squares: {i}/3" for i in (1, 2, 3)
    ]


def test_lines_are_spaced_but_the_last_is_always_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with progress("steps", 10) as advance:
        for _ in range(10):
            advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["steps: 1/10", "steps: 10/10"]


def test_disabled_progress_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    Sweep(square, Point(), [{"x": 1}], progress=False).run()
    assert capsys.readouterr() == ("", "")
