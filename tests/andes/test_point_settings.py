"""`--set point={...}` merges into the experiment's own point (experiments/point_settings.py).

It used to replace the point whole: E8 with `--set 'point={"andes": {...}}'` lost its Poisson
arrivals and ran cyclic bursts, and E4 lost its trace."""

from __future__ import annotations

import pytest

from kairos.andes.policies.andes import AndesConfig
from kairos.andes.policies.pacer import PacingConfig
from kairos.cli_utils import SettingError, parse_assignments
from kairos.experiments import get_experiment
from kairos.experiments.overrides import deep_merge


def config(name: str, *settings: str) -> object:
    exp = get_experiment("andes", name)
    return exp.config(quick=True, overrides=parse_assignments(list(settings), "--set"))


def test_e8_keeps_its_poisson_arrivals_when_andes_settings_are_given() -> None:
    cfg = config("e8", 'point={"andes": {"horizon_s": 5.0}}')
    point = cfg.point  # type: ignore[attr-defined]
    assert point.arrival == "poisson"
    assert point.andes == {"horizon_s": 5.0}


def test_a_pacing_setting_changes_only_what_it_names() -> None:
    cfg = config("e8", 'point={"andes": {"pacing": {"margin": 0.7}}}')
    point = cfg.point  # type: ignore[attr-defined]
    assert point.arrival == "poisson" and point.andes == {"pacing": {"margin": 0.7}}
    pacing = AndesConfig.model_validate(point.andes).pacing
    assert pacing == PacingConfig().model_copy(update={"margin": 0.7})
    assert AndesConfig.model_validate({"pacing": None}).pacing is None  # pacing off


def test_e4_keeps_its_trace_and_only_the_named_keys_change() -> None:
    cfg = config("e4", 'point={"seed": 3, "andes": {"solve_every": 1}}')
    point = cfg.point  # type: ignore[attr-defined]
    assert (point.arrival, point.dataset, point.collect) == ("azure_trace", "azure", True)
    assert point.seed == 3 and point.andes == {"solve_every": 1}


def test_nested_dicts_merge_and_other_values_replace() -> None:
    base = {"a": {"x": 1, "y": {"p": 1, "q": 2}}, "b": [1, 2], "c": {"z": 1}}
    got = deep_merge(base, {"a": {"y": {"q": 3}}, "b": [3], "c": None})
    assert got == {"a": {"x": 1, "y": {"p": 1, "q": 3}}, "b": [3], "c": None}
    assert base["a"] == {"x": 1, "y": {"p": 1, "q": 2}}  # not changed in place


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ('point={"arival": "poisson"}', ["'point.arival'", "arrival"]),
        ('point={"andes": {"horizn_s": 5}}', ["'horizn_s'", "horizon_s"]),
        ('point={"andes": {"pacing": {"margn": 0.7}}}', ["'pacing.margn'", "margin", "overtake"]),
    ],
)
def test_an_unknown_key_is_an_error_naming_it(setting: str, named: list[str]) -> None:
    with pytest.raises(SettingError) as err:
        config("e8", setting)
    assert all(word in str(err.value) for word in named), str(err.value)
