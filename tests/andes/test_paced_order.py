"""Pacing's order and the settings around it (`policies/pacing.py`, `policies/pacer.py`):
shortest prefill first with an aging bound, admitting between solves, and the experiments
that vary one setting of the Andes given (its pacing included)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kairos.andes.policies.andes import AndesConfig, AndesPolicy
from kairos.andes.policies.pacer import PacingConfig
from kairos.andes.policies.pacing import paced_order
from kairos.andes.request import Request, Status
from tests.andes.test_pacing import req, streaming, view


def decoding(times: list[float]) -> Request:
    """A running stream between decode steps: all its context but the newest token cached."""
    r = streaming(times)
    r.computed = r.context_len - 1
    return r


def test_shortest_first_but_an_overdue_prompt_goes_first() -> None:
    long_old = req(1, prompt=5000, arrival=0.0)  # TTFT target 1 s
    short_new = req(2, prompt=100, arrival=3.5)
    mid = req(3, prompt=800, arrival=3.0)
    swapped = req(4, prompt=9000)
    swapped.status = Status.SWAPPED
    queue = [long_old, short_new, swapped, mid]
    assert paced_order(queue, 4.0, "admission", None) == queue
    # shortest first, the swap-in (no prefill) ahead of them
    assert paced_order(queue, 4.0, "shortest", None) == [swapped, short_new, mid, long_old]
    # waited 4 s > (1 + 2) x 1 s: overdue, so first; not yet overdue at (1 + 4) x 1 s
    assert paced_order(queue, 4.0, "shortest", 2.0) == [swapped, long_old, short_new, mid]
    assert paced_order(queue, 4.0, "shortest", 4.0)[1] is short_new
    with pytest.raises(ValueError):
        PacingConfig(order="hrrn")  # removed: mean TTFT 1.14x


def test_between_solves_pacing_admits_instead_of_holding() -> None:
    user = decoding([0.5 + 0.01 * j for j in range(8)])  # slack 1.8 s at t = 1.2
    short, long_ = req(1, prompt=300), req(2, prompt=3000)
    v = replace(view([user], 1.2), iteration=1, waiting=[long_, short])  # not a solve (3)
    # a token latency above 1/s_max makes Andes compute-bound: it solves every 3rd iteration
    v = replace(v, token_interval_s=1.0)
    paced = PacingConfig(margin=1.0, order="admission", between_solves=False, overtake=None)
    held = AndesPolicy(AndesConfig(pacing=paced)).decide(v)
    assert held.admit == []
    between = paced.model_copy(update={"between_solves": True, "order": "shortest"})
    assert AndesPolicy(AndesConfig(pacing=between)).decide(v).admit == [short]  # long: > 1.8 s


def test_between_solves_the_perfect_objective_admits_only_what_its_solve_chose() -> None:
    """`perfect` leaves requests waiting on purpose; admitting the queue between its solves
    undid it (E10 share at perfect QoE 0.09-0.16 against 0.45-0.68 without that)."""
    user = decoding([0.5 + 0.01 * j for j in range(8)])
    short, other = req(1, prompt=300), req(2, prompt=200)
    v = replace(view([user], 1.2), iteration=1, waiting=[other, short], token_interval_s=1.0)
    paced = PacingConfig(margin=1.0, order="shortest", between_solves=True, overtake=None)
    average = AndesPolicy(AndesConfig(pacing=paced)).decide(v)
    assert average.admit == [other, short]  # the queue, shortest first
    perfect = AndesPolicy(AndesConfig(pacing=paced, objective="perfect"))
    assert perfect.decide(v).admit == []  # no solve yet: nothing chosen
    perfect._chosen = [short.request_id]  # what a solve chose and pacing held
    assert perfect.decide(v).admit == [short]
    max_min = AndesPolicy(AndesConfig(pacing=paced, objective="max_min"))
    assert max_min.decide(v).admit == [other, short]  # better on its own measure so


def test_the_ablation_removes_each_guard_from_the_andes_given() -> None:
    from kairos.andes.experiments.variants import GUARDS, ablation_variants

    paced = {"margin": 0.65}
    given = {"pacing": paced, "solve_every": 5}
    v = ablation_variants(given)
    assert v["without anti_starvation"]["andes"] == given | {"starvation_after": None}
    assert v["without solve_every"]["andes"] == {"pacing": paced, "solve_every": 1}
    assert v["literal (no guards)"]["andes"]["pacing"] == paced | {"overtake": None}
    assert all(v[f"without {g}"]["andes"]["pacing"] == paced for g in GUARDS)
    assert ablation_variants({})["without prefer_swap"]["andes"] == {"prefer_swap": False}
    # pacing (the default's, or a paced one given): its own anti-starvation rule, both rules
    # off together, and pacing off are rows too
    no_rules = given | {"starvation_after": None, "pacing": {"margin": 0.65, "overtake": None}}
    assert v["without overtaking"]["andes"] == given | {"pacing": paced | {"overtake": None}}
    assert v["without both anti-starvation rules"]["andes"] == no_rules
    assert v["without pacing"]["andes"] == given | {"pacing": None}
    assert ablation_variants({})["without overtaking"]["andes"] == {"pacing": {"overtake": None}}
    assert v["literal (no guards)"]["andes"]["starvation_after"] is None
    unpaced = ablation_variants({"pacing": None})  # no pacing rows, and none turned back on
    assert "without pacing" not in unpaced and "without overtaking" not in unpaced
    assert unpaced["literal (no guards)"]["andes"]["pacing"] is None


class _Captured(Exception):
    """Raised by the stand-in sweep once it has seen the experiment's variants."""


def test_e5_e7_e10_variants_change_one_setting_of_the_andes_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each variant changes one setting of `point.andes`, not of the default Andes: run with
    `--set point=` a paced Andes, E5 must compare it with itself without the refiner (an update
    replaces the point's whole `andes`, so E5/E7/E10 used to compare against the default)."""
    import kairos.andes.experiments.bursts as bursts
    import kairos.andes.experiments.others as others
    from kairos.andes.experiments.workload import SimPoint

    given = {"pacing": {"margin": 0.65, "order": "shortest"}}
    seen: list[dict[str, Any]] = []

    def capture(*args: Any, **kwargs: Any) -> None:
        seen.append(args[5] if len(args) > 5 else {p["policy"]: p for p in args[2]})
        raise _Captured

    monkeypatch.setattr(bursts, "policy_sweep", capture)
    point = SimPoint(andes=given)
    with pytest.raises(_Captured):
        bursts.e5(bursts.DurationConfig(point=point), None)  # type: ignore[arg-type]
    assert seen[-1]["andes-no-refiner"]["andes"] == given | {"refiner": False}
    with pytest.raises(_Captured):
        bursts.e7(bursts.HorizonConfig(point=point, horizons=[2.0]), None)  # type: ignore[arg-type]
    assert seen[-1]["andes Δt=2"]["andes"] == given | {"horizon_s": 2.0}

    class Ctx:
        def sweep(self, fn: Any, base: Any, points: list[dict[str, Any]], name: str) -> None:
            seen.append({p["policy"] + str(p.get("andes")): p for p in points})
            raise _Captured

    with pytest.raises(_Captured):
        others.e10(others.ObjectivesConfig(point=point), Ctx())  # type: ignore[arg-type]
    andes_rows = [p for p in seen[-1].values() if p["policy"] == "andes"]
    assert andes_rows and all(p["andes"]["pacing"]["margin"] == 0.65 for p in andes_rows)
