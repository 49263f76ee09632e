"""The shared policy registry: built-ins by (system, name), plug-ins from entry points."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any

import numpy as np
import pytest

from kairos import registry
from kairos.andes.policies.andes import AndesConfig, AndesPolicy
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.policies.registry import POLICY_NAMES, make_policy, policy_names
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.systems import SYSTEM_NAMES, make_system
from kairos.registry import POLICIES, PluginError, Registry, UnknownName
from kairos.venn.policies.registry import POLICIES as VENN_POLICIES
from kairos.venn.policies.registry import make_policy as make_venn_policy


@dataclass
class ToyPolicy:
    """What a plug-in factory returns; the tests only check that it arrives."""

    args: tuple[Any, ...]
    options: dict[str, Any]


def make_toy(*args: Any, **options: Any) -> ToyPolicy:
    return ToyPolicy(args, options)


NOT_CALLABLE = 42


def _plug_in(monkeypatch: pytest.MonkeyPatch, **targets: str) -> None:
    """Entry points `name = tests.test_registry:target` in the policy group, and no others."""
    entries = [EntryPoint(name, f"{__name__}:{t}", registry.GROUP) for name, t in targets.items()]

    def entry_points(group: str) -> list[EntryPoint]:
        return entries if group == registry.GROUP else []

    monkeypatch.setattr(registry, "entry_points", entry_points)


def test_the_systems_register_their_built_ins_in_order() -> None:
    assert POLICY_NAMES == ("fcfs", "sarathi", "lqsf", "andes", "andes-dp")
    assert POLICIES.names("orloj", plugins=False) == SYSTEM_NAMES
    assert VENN_POLICIES[:2] == ("random", "random-pure") and "venn-nosched" in VENN_POLICIES


def test_the_thin_wrappers_still_build_the_built_ins() -> None:
    assert isinstance(make_policy("fcfs"), FCFSPolicy)
    andes = make_policy("andes", horizon_s=5.0)
    assert isinstance(andes, AndesPolicy) and andes.config == AndesConfig(horizon_s=5.0)
    assert make_venn_policy("venn-nosched").name == "venn-nosched"
    assert type(make_system("edf", model=BatchLatencyModel(), slo_ms=10.0)).__name__ == "EDFPolicy"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownName, match="'robin' for andes; known: fcfs, sarathi"):
        POLICIES.get("andes", "robin")
    with pytest.raises(ValueError, match="unknown policy 'robin'"):
        make_policy("robin")
    with pytest.raises(ValueError, match=r"unknown system 'robin'; choose from clipper, nexus"):
        make_system("robin", model=BatchLatencyModel(), slo_ms=10.0)


def test_a_plug_in_is_built_by_name_through_each_systems_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _plug_in(monkeypatch, **{"andes.toy": "make_toy", "venn.toy": "make_toy"})
    assert policy_names() == (*POLICY_NAMES, "toy")
    toy: Any = make_policy("toy", horizon_s=2.0)
    assert isinstance(toy, ToyPolicy) and toy.args == (AndesConfig(horizon_s=2.0),)
    rng = np.random.default_rng(1)
    venn: Any = make_venn_policy("toy", rng, tiers=3)
    assert venn.args == (rng,) and venn.options == {"tiers": 3}
    assert "toy" not in POLICIES.names("orloj")


def test_an_orloj_plug_in_gets_the_builder_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    _plug_in(monkeypatch, **{"orloj.toy": "make_toy"})
    model = BatchLatencyModel()
    toy: Any = make_system("toy", model=model, slo_ms=9.0, sizes=(1, 2), options={"k": 1})
    assert toy.args == (model, 9.0, None, (1, 2)) and toy.options == {"k": 1}


def test_a_plug_in_cannot_replace_a_built_in(monkeypatch: pytest.MonkeyPatch) -> None:
    _plug_in(monkeypatch, **{"andes.fcfs": "make_toy"})
    assert isinstance(make_policy("fcfs"), FCFSPolicy)
    assert POLICIES.names("andes").count("fcfs") == 1


def test_broken_plug_ins_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    _plug_in(monkeypatch, **{"andes.gone": "missing", "andes.odd": "NOT_CALLABLE"})
    with pytest.raises(PluginError, match=r"cannot load the policy andes.gone = .*AttributeError"):
        make_policy("gone")
    with pytest.raises(PluginError, match="is not callable"):
        make_policy("odd")


def test_an_entry_point_without_a_system_is_skipped_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _plug_in(monkeypatch, toy="make_toy")
    with pytest.warns(UserWarning, match="not named SYSTEM.NAME"):
        assert POLICIES.names("andes") == POLICY_NAMES


def test_a_registry_refuses_a_second_factory_under_one_name() -> None:
    reg = Registry("kairos.test-only", what="widget")
    reg.add("sys", "a", make_toy)
    reg.add("sys", "a", make_toy)  # the same factory again: a re-import, harmless
    with pytest.raises(ValueError, match="sys already has a widget named 'a'"):
        reg.add("sys", "a", ToyPolicy)
    assert reg.create("sys", "a", 1, x=2) == ToyPolicy((1,), {"x": 2})
    with pytest.raises(UnknownName, match="unknown widget 'b' for sys; known: a"):
        reg.get("sys", "b")
