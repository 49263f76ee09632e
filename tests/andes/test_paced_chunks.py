"""Pacing's order and chunks (`policies/pacing.py`): shortest prefill first with an aging
bound, and prefill chunks sized to the running users' buffered text, carried out by the
scheduler on prefill-only iterations (the rest of a prompt waits, parked with its KV)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kairos.andes.policies.andes import AndesConfig, AndesPolicy
from kairos.andes.policies.pacing import paced_chunks, paced_order
from kairos.andes.policy import Decision, SchedulerView
from kairos.andes.request import Request, Status
from kairos.andes.scheduler import Scheduler
from tests.andes.test_pacing import PROFILE, req, streaming, view


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
    # highest response ratio (wait + prefill) / prefill: the long prompt's 4 s wait over its
    # 5.01 s prefill (1.8) loses to the short one's 0.5 s over 0.11 s (5.5) and the middle
    # one's 1 s over 0.81 s (2.2)
    assert paced_order(queue, 4.0, "hrrn", None, PROFILE) == [swapped, short_new, mid, long_old]
    with pytest.raises(ValueError):
        paced_order(queue, 4.0, "hrrn", None)  # needs the latency model


def test_chunks_fill_the_buffers_and_cut_the_last_prompt() -> None:
    user = decoding([0.5 + 0.01 * j for j in range(8)])  # slack 1.8 s at t = 1.2
    v = view([user], 1.2)
    decode = float(PROFILE.decode_time(1, user.context_len))
    a, b = req(1, prompt=500), req(2, prompt=3000)
    chunks = paced_chunks(v, [a, b], 1.0, "admission", min_chunk=64)
    assert chunks is not None and [r for r, _ in chunks] == [a, b]
    assert chunks[0][1] == 500  # whole: 0.51 s fits
    n = chunks[1][1]
    assert 64 <= n < 3000
    # the largest chunk whose iteration, plus the decode after it, fits the 1.8 s
    budget = 1.8 - decode
    assert PROFILE.batch_prefill_time([500, n]) <= budget < PROFILE.batch_prefill_time([500, n + 1])
    # margin 3.3: 1.8/3.3 s holds `a` and then room for less than a minimum chunk of `b`
    assert paced_chunks(v, [a, b], 3.3, "admission", min_chunk=64) == [(a, 500)]
    # shortest first: a chunk of `a` (0.17 s of room), though `b` was listed first
    assert [r for r, _ in paced_chunks(v, [b, a], 10.0, "shortest", min_chunk=64) or []] == [a]
    assert paced_chunks(view([], 1.2), [a, b], 1.0) is None  # nobody streaming
    # a stream still prefilling has no text: it does not limit the chunks
    prefilling = req(7, prompt=400)
    prefilling.status = Status.RUNNING
    assert paced_chunks(view([prefilling], 1.2), [a], 1.0) is None


class _Chunker:
    """A policy that admits everything and asks for the chunks it is given."""

    name = "chunker"
    chunked_prefill = False
    chunk_size: int | None = None

    def __init__(self) -> None:
        self.chunks: list[tuple[int, int]] | None = None  # (request index, tokens)

    def decide(self, v: SchedulerView) -> Decision:
        reqs = {r.request_id: r for r in (*v.running, *v.waiting)}
        chunks = None
        if self.chunks is not None:
            chunks = [(reqs[str(i)], n) for i, n in self.chunks if str(i) in reqs]
        return Decision(admit=list(v.waiting), prefill_chunks=chunks)


def test_scheduler_runs_chunks_alone_and_parks_the_rest() -> None:
    policy = _Chunker()
    s = Scheduler(policy, PROFILE)
    s.add_request(req(1, prompt=200))
    out = s.schedule(0.0)  # nobody streams: vLLM 0.6's whole prefill
    assert [(st.tokens, st.samples) for st in out.steps] == [(200, True)]
    s.update_from_output(out, 0.3)
    s.add_request(req(2, prompt=1000, arrival=0.3))
    policy.chunks = [(2, 400)]
    out = s.schedule(0.3)  # a chunk of the new prompt, alone: request 1 does not decode
    assert [(st.request.request_id, st.tokens, st.samples) for st in out.steps] == [
        ("2", 400, False)
    ]
    s.update_from_output(out, 0.7)
    policy.chunks = []
    out = s.schedule(0.7)  # no chunk: a decode iteration, request 2 parked with its KV
    assert [(st.request.request_id, st.tokens) for st in out.steps] == [("1", 1)]
    assert s.requests["2"].status is Status.RUNNING and s.requests["2"].computed == 400
    s.update_from_output(out, 0.72)
    policy.chunks = [(2, 10_000)]
    out = s.schedule(0.72)  # the rest of the prompt: it samples its first token
    assert [(st.tokens, st.cached, st.samples) for st in out.steps] == [(600, 400, True)]


def test_andes_paces_in_chunks_only_when_asked() -> None:
    cfg = AndesConfig()
    assert (cfg.pace_chunks, cfg.pace_order, cfg.pace_starve_after) == (False, "admission", None)
    user = decoding([0.5 + 0.01 * j for j in range(8)])
    v = replace(view([user], 1.2), waiting=[req(1, prompt=3000)])
    plain = AndesPolicy(AndesConfig(pace_prefills=1.0)).decide(v)
    assert plain.prefill_chunks is None and plain.admit == []  # held whole: 3 s > 1.8 s
    chunked = AndesPolicy(AndesConfig(pace_prefills=1.0, pace_chunks=True)).decide(v)
    assert chunked.admit == list(v.waiting)
    assert chunked.prefill_chunks is not None
    assert 0 < chunked.prefill_chunks[0][1] < 3000
    with pytest.raises(ValueError):
        AndesConfig(pace_order="longest")


def test_between_solves_pacing_admits_instead_of_holding() -> None:
    user = decoding([0.5 + 0.01 * j for j in range(8)])  # slack 1.8 s at t = 1.2
    short, long_ = req(1, prompt=300), req(2, prompt=3000)
    v = replace(view([user], 1.2), iteration=1, waiting=[long_, short])  # not a solve (3)
    # a token latency above 1/s_max makes Andes compute-bound: it solves every 3rd iteration
    v = replace(v, token_interval_s=1.0)
    held = AndesPolicy(AndesConfig(pace_prefills=1.0)).decide(v)
    assert held.admit == []
    cfg = AndesConfig(pace_prefills=1.0, pace_between_solves=True, pace_order="shortest")
    assert AndesPolicy(cfg).decide(v).admit == [short]  # the long one does not fit 1.8 s


def test_the_ablation_removes_each_guard_from_the_andes_given() -> None:
    from kairos.andes.experiments.bursts import GUARDS, ablation_variants

    given = {"pace_prefills": 0.65, "solve_every": 5}
    v = ablation_variants(given)
    assert v["without anti_starvation"]["andes"] == given | {"starvation_after": None}
    assert v["without solve_every"]["andes"] == {"pace_prefills": 0.65, "solve_every": 1}
    assert v["literal (no guards)"]["andes"]["pace_prefills"] == 0.65
    assert all(v[f"without {g}"]["andes"]["pace_prefills"] == 0.65 for g in GUARDS)
    assert ablation_variants({})["without prefer_swap"]["andes"] == {"prefer_swap": False}


def test_backfill_lets_a_fitting_prompt_pass_one_that_does_not_unless_it_is_overdue() -> None:
    from kairos.andes.policies.pacing import pace_admissions

    user = decoding([0.5 + 0.01 * j for j in range(8)])  # slack 1.8 s at t = 1.2
    long_, short = req(1, prompt=3000, arrival=1.0), req(2, prompt=300, arrival=1.1)
    v = view([user], 1.2)
    assert pace_admissions(v, [long_, short], 1.0) == []  # cut at the long one
    assert pace_admissions(v, [long_, short], 1.0, backfill=True) == [short]
    old = req(3, prompt=3000, arrival=-5.0)  # waited 6.2 s: overdue past (1 + 2) x 1 s
    assert pace_admissions(v, [old, short], 1.0, True, starve_after=2.0) == []
    assert pace_admissions(v, [old, short], 1.0, True, starve_after=8.0) == [short]


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

    given = {"pace_prefills": 0.65, "pace_order": "shortest"}
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
    assert andes_rows and all(p["andes"]["pace_prefills"] == 0.65 for p in andes_rows)
