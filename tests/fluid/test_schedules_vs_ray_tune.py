"""Our SHA, ASHA and HyperBand against Ray Tune's schedulers on the same deterministic instance.

Each configuration's metric at iteration t is a fixed function, `a + b * ln(t)` (curves cross,
so a rung must be ranked by its own metric), and results are reported in a fixed order. Our
tuners are driven through `TuningAPI`; Ray's schedulers through their `TrialScheduler`
callbacks (`on_trial_add`, `on_trial_result`, `choose_trial_to_run`, and `stop_trial` on a
stand-in controller that follows Tune's canonical stop), with stand-in trials: no Ray cluster.
A run is summarised as the iteration at which each configuration left (stopped at a rung, or
finished), which says who went past each rung. Where the rules genuinely differ, the instance
avoids the difference and a separate test pins both behaviours (docs/fluid.md, "Schedules
against Ray Tune").

Ray's synchronous successive halving is a HyperBand bracket; `HyperBandForBOHB` opens the most
aggressive bracket first, so with `max_t = 27`, `eta = 3` and 27 trials it is exactly one SHA
bracket (27 at 1, 9 at 3, 3 at 9, 1 at 27).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

schedulers = pytest.importorskip("ray.tune.schedulers")  # the `tune` extra; one slow import

from kairos.fluid.trial import TrialSpec  # noqa: E402
from kairos.fluid.tuners.asha import ASHA, milestones  # noqa: E402
from kairos.fluid.tuners.hyperband import HyperBand  # noqa: E402
from kairos.fluid.tuners.sampling import Config  # noqa: E402
from kairos.fluid.tuners.sha import SuccessiveHalving, hyperband_brackets  # noqa: E402

CONTINUE = schedulers.TrialScheduler.CONTINUE
PAUSE = schedulers.TrialScheduler.PAUSE
STOP = schedulers.TrialScheduler.STOP
PENDING, RUNNING, PAUSED, TERMINATED = "PENDING", "RUNNING", "PAUSED", "TERMINATED"
ETA = 3

# ---------------------------------------------------------------------------------------------
# the instance

PHI = (math.sqrt(5) - 1) / 2


def configs(count: int, prefix: str = "c", worst_first: bool = False) -> list[Config]:
    """`count` configurations with distinct curves `a + b ln t`. With `worst_first` the first
    one is flat at 0, below every other at every iteration."""
    out = []
    for i in range(count):
        k = i + 1
        a, b = (k * PHI) % 1.0, 0.3 * ((k * math.sqrt(2)) % 1.0)
        if worst_first and i == 0:
            a, b = 0.0, 0.0
        out.append({"name": f"{prefix}{i:03d}", "a": a, "b": b})
    return out


def score(config: Config, t: int) -> float:
    return float(config["a"] + config["b"] * math.log(t))


def top(cands: Sequence[Config], t: int, k: int) -> set[str]:
    """The rule both sides share: the `k` best by the metric at iteration `t`."""
    return {c["name"] for c in sorted(cands, key=lambda c: -score(c, t))[:k]}


class FixedSampler:
    def __init__(self, pool: Sequence[Config]) -> None:
        self.pool = deque(pool)

    def sample(self) -> Config:
        return self.pool.popleft()

    def observe(self, config: Config, budget: int, metric: float) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# driving our tuners


class API:
    def __init__(self) -> None:
        self.queue: deque[TrialSpec] = deque()
        self.stopped: set[str] = set()
        self.groups = 0

    def submit_group(self, trials: Sequence[TrialSpec]) -> int:
        self.queue.extend(trials)
        self.groups += 1
        return self.groups - 1

    def add_to_group(self, group: int, trials: Sequence[TrialSpec]) -> None:
        self.queue.extend(trials)

    def stop(self, trial_id: str) -> None:
        self.stopped.add(trial_id)

    def now(self) -> float:
        return 0.0


def ours_sync(tuner: Any) -> dict[str, int]:
    """Synchronous tuners: run each submitted trial to its budget (or its stop), one after
    another in submission order; a promoted trial resumes where it left off."""
    api, done, names = API(), dict[str, int](), dict[str, str]()
    tuner.start(api)
    while api.queue:
        spec = api.queue.popleft()
        names[spec.trial_id] = spec.config["name"]
        while done.get(spec.trial_id, 0) < spec.budget and spec.trial_id not in api.stopped:
            done[spec.trial_id] = done.get(spec.trial_id, 0) + 1
            it = done[spec.trial_id]
            tuner.on_result(api, spec.trial_id, it, score(spec.config, it))
        tuner.on_trial_end(api, spec.trial_id, spec.trial_id in api.stopped)
    assert tuner.finished()
    return {names[i]: t for i, t in done.items()}


def ours_async(tuner: Any, every: int = 1) -> dict[str, int]:
    """Rolling groups: the live trials report one result each in turn (round robin); a trial
    that leaves is replaced by what the tuner adds. `every`: report every `every` iterations."""
    api, done = API(), dict[str, int]()
    tuner.start(api)
    live: deque[TrialSpec] = deque()
    while api.queue or live:
        live.extend(api.queue)
        api.queue.clear()
        spec = live.popleft()
        it = done.get(spec.config["name"], 0) + 1
        done[spec.config["name"]] = it
        if it % every == 0 or it == spec.budget:
            tuner.on_result(api, spec.trial_id, it, score(spec.config, it))
        if spec.trial_id in api.stopped or it == spec.budget:
            tuner.on_trial_end(api, spec.trial_id, spec.trial_id in api.stopped)
        else:
            live.append(spec)
    assert tuner.finished()
    return done


# ---------------------------------------------------------------------------------------------
# driving Ray Tune's schedulers


class StandInTrial:
    """What Ray's schedulers read from a Trial: its id, status, saving flag and last result."""

    def __init__(self, config: Config) -> None:
        self.trial_id = config["name"]
        self.config = config
        self.status = PENDING
        self.is_saving = False
        self.last_result: dict[str, Any] = {}
        self.iteration = 0


class NullSearcher:
    def on_pause(self, trial_id: str) -> None:
        pass

    def on_unpause(self, trial_id: str) -> None:
        pass


class StandInController:
    """The parts of Tune's controller the schedulers call back into."""

    def __init__(self, scheduler: Any, pool: Sequence[Config]) -> None:
        self.scheduler = scheduler
        self.trials = [StandInTrial(c) for c in pool]
        self.search_alg = SimpleNamespace(searcher=NullSearcher())  # HyperBandForBOHB's hooks

    def get_trials(self) -> list[StandInTrial]:
        return list(self.trials)

    def stop_trial(self, trial: StandInTrial) -> None:
        # Tune's canonical stop: a paused or pending trial is removed from the scheduler, a
        # running one completes with its last result
        if trial.status == TERMINATED:
            return
        if trial.status in (PENDING, PAUSED):
            self.scheduler.on_trial_remove(self, trial)
        else:
            self.scheduler.on_trial_complete(self, trial, trial.last_result)
        trial.status = TERMINATED

    def step(self, trial: StandInTrial, max_t: int, every: int = 1) -> str:
        """One iteration of a running trial and the scheduler's decision on it."""
        trial.iteration += 1
        assert trial.iteration <= max_t, f"{trial.trial_id} ran past max_t"
        if trial.iteration % every and trial.iteration != max_t:
            return CONTINUE  # nothing reported this iteration
        trial.last_result = {
            "training_iteration": trial.iteration,
            "score": score(trial.config, trial.iteration),
        }
        decision: str = self.scheduler.on_trial_result(self, trial, trial.last_result)
        if decision == STOP:
            self.stop_trial(trial)
        elif decision == PAUSE:
            trial.status = PAUSED
        return decision

    def run_sync(self, max_t: int) -> dict[str, int]:
        """One trial at a time, the one `choose_trial_to_run` picks, until it is paused or
        stopped."""
        for trial in self.trials:
            self.scheduler.on_trial_add(self, trial)
        while (trial := self.scheduler.choose_trial_to_run(self)) is not None:
            trial.status = RUNNING
            while self.step(trial, max_t) == CONTINUE:
                pass
        assert all(t.status == TERMINATED for t in self.trials)
        return {t.trial_id: t.iteration for t in self.trials}

    def run_async(self, max_t: int, live: int, every: int = 1) -> dict[str, int]:
        """Round robin over `live` running trials; a stopped one is replaced by the next."""
        waiting = deque(self.trials)
        running: deque[StandInTrial] = deque()
        while waiting or running:
            while waiting and len(running) < live:
                trial = waiting.popleft()
                self.scheduler.on_trial_add(self, trial)
                trial.status = RUNNING
                running.append(trial)
            trial = running.popleft()
            if self.step(trial, max_t, every) == CONTINUE:
                running.append(trial)
        return {t.trial_id: t.iteration for t in self.trials}


def ray_asha(max_t: int) -> Any:
    return schedulers.AsyncHyperBandScheduler(
        metric="score", mode="max", max_t=max_t, grace_period=1, reduction_factor=ETA
    )


def ray_sha(max_t: int) -> Any:
    return schedulers.HyperBandForBOHB(
        metric="score", mode="max", max_t=max_t, reduction_factor=ETA
    )


def ray_hyperband(max_t: int) -> Any:
    return schedulers.HyperBandScheduler(
        metric="score", mode="max", max_t=max_t, reduction_factor=ETA
    )


def survivors(left_at: dict[str, int], budget: int) -> set[str]:
    """Who trained to at least `budget` iterations (went past every earlier rung)."""
    return {name for name, t in left_at.items() if t >= budget}


# ---------------------------------------------------------------------------------------------
# the instance itself


def test_instance_has_no_ties_and_its_curves_cross() -> None:
    pool = configs(143)
    for t in range(1, 1001):
        values = [score(c, t) for c in pool]
        assert len(set(values)) == len(values), f"tie at iteration {t}"
    # the ranking changes between rungs, so ranking a rung by an earlier metric would show
    assert top(pool, 1, 9) != top(pool, 27, 9)
    worst = configs(64, worst_first=True)
    assert all(score(worst[0], t) < min(score(c, t) for c in worst[1:]) for t in (1, 3, 729))


# ---------------------------------------------------------------------------------------------
# SHA: 27 configurations, r_min 1, max_t 27, eta 3


def test_sha_promotions_equal_ray_tunes_bracket() -> None:
    pool = configs(27)
    ours = ours_sync(SuccessiveHalving(FixedSampler(pool), n=27, r_min=1, max_t=27, eta=ETA))
    ray = StandInController(ray_sha(27), pool).run_sync(27)
    assert ours == ray
    # and both are the rule: the best third of each rung by that rung's metric
    alive = list(pool)
    for budget, nxt, keep in ((1, 3, 9), (3, 9, 3), (9, 27, 1)):
        expected = top(alive, budget, keep)
        assert survivors(ours, nxt) == expected
        assert {n for n, t in ours.items() if t == budget} == {c["name"] for c in alive} - expected
        alive = [c for c in alive if c["name"] in expected]
    assert sorted(ours.values()).count(27) == 1


def test_sha_rung_not_full_ray_keeps_by_planned_size_ours_by_members() -> None:
    # 10 configurations where Ray's bracket is planned for 27: Ray keeps ceil(27/3) = 9 of the
    # 10 at rung 1 (then 3, then 1 reaches 27); ours keeps floor(10/3) = 3, then 1, and the
    # bracket ends at 9 with floor(1/3) = 0 promoted (Li et al.'s n_i = floor(n eta^-i)).
    pool = configs(10)
    ours = ours_sync(SuccessiveHalving(FixedSampler(pool), n=10, r_min=1, max_t=27, eta=ETA))
    ray = StandInController(ray_sha(27), pool).run_sync(27)
    assert survivors(ray, 3) == top(pool, 1, 9)
    assert len(survivors(ray, 9)) == 3 and len(survivors(ray, 27)) == 1
    assert survivors(ours, 3) == top(pool, 1, 3)
    assert survivors(ours, 9) == top([c for c in pool if c["name"] in survivors(ours, 3)], 3, 1)
    assert max(ours.values()) == 9


def test_sha_ties_ours_keep_the_smaller_id_ray_the_later_trial() -> None:
    flat = [{"name": f"c{i:03d}", "a": 0.5, "b": 0.0} for i in range(3)]  # all equal
    ours = ours_sync(SuccessiveHalving(FixedSampler(flat), n=3, r_min=1, max_t=3, eta=ETA))
    ray = StandInController(ray_sha(3), flat).run_sync(3)  # one bracket: 3 at 1, 1 at 3
    assert survivors(ours, 3) == {"c000"}  # sort by (-metric, trial id)
    assert survivors(ray, 3) == {"c002"}  # stable ascending sort, keeps the tail


# ---------------------------------------------------------------------------------------------
# ASHA: the spec's parameters (max_t 1000, grace 1, eta 3), 64 configurations, 8 live


def test_asha_stops_equal_ray_tunes() -> None:
    # the first configuration is the worst everywhere, so the second arrival at any rung is
    # never below the first: the one case where the rules differ (next test) does not arise
    pool = configs(64, worst_first=True)
    ours = ours_async(ASHA(FixedSampler(pool), max_t=1000, concurrency=8, n=64, eta=ETA))
    ray = StandInController(ray_asha(1000), pool).run_async(1000, live=8)
    assert ours == ray
    rungs = milestones(1, ETA, 1000)
    assert rungs == [1, 3, 9, 27, 81, 243, 729]
    left = set(ray.values())
    assert {1, 3, 9, 243, 1000} <= left  # stops at several rungs, and some finish
    assert left <= set(rungs) | {1000}


def test_asha_one_record_ray_cuts_ours_waits_for_two() -> None:
    # Ray's cutoff is the (1 - 1/eta) quantile of whatever the rung has recorded, one record
    # included; ours needs two records before it stops anyone (tests/fluid/test_driver.py).
    pool = [{"name": "c000", "a": 0.9, "b": 0.0}, {"name": "c001", "a": 0.5, "b": 0.0}]
    ours = ours_async(ASHA(FixedSampler(pool), max_t=9, concurrency=2, n=2, eta=ETA))
    ray = StandInController(ray_asha(9), pool).run_async(9, live=2)
    assert ray == {"c000": 9, "c001": 1}
    assert ours == {"c000": 9, "c001": 9}


def test_asha_stopped_trials_are_never_promoted_later() -> None:
    # Li et al.'s ASHA promotes the top floor(|rung| / eta) of a rung whenever a worker frees
    # up, so a trial that was not promotable when it arrived may be promoted once the rung has
    # grown. Ray's and our stopping form decide once, on arrival. Flat curves, one at a time:
    # c002 (0.95) arrives after 0.9 and 1.0, below their 2/3 quantile 0.967, and is stopped;
    # once all six have reported it is second of six, in the paper's top third.
    levels = [0.9, 1.0, 0.95, 0.1, 0.2, 0.3]
    pool = [{"name": f"c{i:03d}", "a": a, "b": 0.0} for i, a in enumerate(levels)]
    ours = ours_async(ASHA(FixedSampler(pool), max_t=9, concurrency=1, n=6, eta=ETA))
    ray = StandInController(ray_asha(9), pool).run_async(9, live=1)
    assert ours == ray
    assert ray["c002"] == 1
    assert "c002" in top(pool, 1, len(pool) // ETA)  # the paper would promote it later


def test_asha_a_skipped_milestone_ray_records_later_ours_never() -> None:
    # reports every 2 iterations: Ray records a trial at the highest milestone it has passed
    # (2 >= 1, 4 >= 3, 10 >= 9); ours records at a milestone exactly, which the driver
    # guarantees (it reports every iteration), so here it never stops anyone
    pool = configs(12, worst_first=True)
    ours = ours_async(ASHA(FixedSampler(pool), max_t=27, concurrency=4, n=12, eta=ETA), every=2)
    ray = StandInController(ray_asha(27), pool).run_async(27, live=4, every=2)
    assert set(ours.values()) == {27}
    assert min(ray.values()) < 27
    assert set(ray.values()) <= {2, 4, 10, 27}


# ---------------------------------------------------------------------------------------------
# HyperBand: the spec's parameters (max_t 81, eta 3)


def hyperband_pools() -> dict[tuple[int, int], list[Config]]:
    plan = hyperband_brackets(81, ETA)
    assert plan == [(81, 1), (34, 3), (15, 9), (8, 27), (5, 81)]
    return {(n, r): configs(n, prefix=f"r{r}-") for n, r in plan}


def run_hyperband_both() -> tuple[dict[str, int], dict[str, int]]:
    pools = hyperband_pools()
    # ours opens the brackets most aggressive first; Ray fills the least aggressive first
    ours_order = [c for pool in pools.values() for c in pool]
    ray_order = [c for pool in reversed(pools.values()) for c in pool]
    ours = ours_sync(HyperBand(FixedSampler(ours_order), max_t=81, eta=ETA))
    ray = StandInController(ray_hyperband(81), ray_order).run_sync(81)
    return ours, ray


def test_hyperband_brackets_rungs_and_promotions_equal_where_eta_divides() -> None:
    pools = hyperband_pools()
    ours, ray = run_hyperband_both()
    assert set(ours) == set(ray) == {c["name"] for p in pools.values() for c in p}
    for (_, r), pool in pools.items():
        names = {c["name"] for c in pool}
        # same bracket: every member trains to the bracket's first budget on both sides
        assert min(ours[x] for x in names) == min(ray[x] for x in names) == r
        # same rung budgets r, 3r, ... 81
        rung_budgets = {r * ETA**k for k in range(5) if r * ETA**k <= 81}
        assert {ours[x] for x in names} <= rung_budgets
        assert {ray[x] for x in names} <= rung_budgets
    for key in ((81, 1), (5, 81)):  # every rung size divisible by eta (or no halving)
        names = {c["name"] for c in pools[key]}
        assert {x: ours[x] for x in names} == {x: ray[x] for x in names}
    big = {c["name"]: ours[c["name"]] for c in pools[(81, 1)]}
    assert [len(survivors(big, b)) for b in (3, 9, 27, 81)] == [27, 9, 3, 1]


def test_hyperband_keeps_floor_ray_keeps_ceil() -> None:
    # Li et al. keep floor(n_i / eta); Ray keeps ceil(n_i / eta). Both keep the best by the
    # rung's own metric, so ours is always the top of Ray's at the first rung.
    pools = hyperband_pools()
    ours, ray = run_hyperband_both()
    expect = {  # (n, r): survivors after each halving, ours then Ray
        (34, 3): ([11, 3, 1], [12, 4, 2]),
        (15, 9): ([5, 1], [5, 2]),
        (8, 27): ([2], [3]),
    }
    for (n, r), (ours_counts, ray_counts) in expect.items():
        pool = pools[(n, r)]
        for side, counts in ((ours, ours_counts), (ray, ray_counts)):
            left = {c["name"]: side[c["name"]] for c in pool}
            alive = list(pool)
            for k, keep in enumerate(counts):
                budget = r * ETA**k
                expected = top(alive, budget, keep)
                assert survivors(left, budget * ETA) == expected
                alive = [c for c in alive if c["name"] in expected]
        first = r * ETA
        assert survivors({c["name"]: ours[c["name"]] for c in pool}, first) <= survivors(
            {c["name"]: ray[c["name"]] for c in pool}, first
        )


def test_hyperband_sizing_off_a_power_of_eta() -> None:
    # max_t 200: ours s_max = floor(log3 200) = 4, n = ceil(5/(s+1) 3^s), r = round(200 3^-s);
    # Ray s_max + 1 = round(log3 200) + 1 = 6, n = ceil(6/(s+1) 3^s), r = int(200 3^-s), and it
    # skips s = 5 (r would be 0). Ray's plan is read back from its behaviour.
    assert hyperband_brackets(200, ETA) == [(81, 2), (34, 7), (15, 22), (8, 67), (5, 200)]
    scheduler = ray_hyperband(200)
    controller = StandInController(scheduler, configs(6 + 9 + 18 + 41 + 98))
    sizes, count, brackets = [], 0, 0
    for trial in controller.trials:
        scheduler.on_trial_add(controller, trial)
        opened = scheduler.state()["num_brackets"]
        if opened != brackets:
            if brackets:
                sizes.append(count)
            brackets, count = opened, 0
        count += 1
    sizes.append(count)
    assert sizes == [6, 9, 18, 41, 98]
    # each bracket's first budget: its first trial is paused there (the others have not)
    firsts, start = [], 0
    for size in sizes:
        trial = controller.trials[start]
        trial.status = RUNNING
        while controller.step(trial, 200) == CONTINUE:
            pass
        firsts.append(trial.iteration)
        start += size
    assert firsts == [200, 66, 22, 7, 2]
