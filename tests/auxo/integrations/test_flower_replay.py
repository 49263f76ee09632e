"""A real Flower run's decisions, replayed through the policy the simulator runs.

Twelve clients in two latent groups train for six rounds under Flower's simulation engine
(`run_simulation`, Ray actors) with a split scheduled at round 3, and the server writes its
decision log to a file. The log is read back and its cohort-rounds' inputs (claimed L and R,
compressed updates) are fed through a fresh `AuxoPolicy` (`kairos.auxo.replay`): every
cohort-round and cohort change must come out the same. The comparison must notice one altered
decision at its index, and a replay must differ where one client's claimed reward is changed or
the split is scheduled a round later.
"""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("flwr")
ray = pytest.importorskip("ray")

from kairos.auxo.decisions import CODEC, CohortRound, Split, open_log  # noqa: E402
from kairos.auxo.integrations.flower import AuxoStrategy  # noqa: E402
from kairos.auxo.integrations.flower_simulation import (  # noqa: E402
    run_auxo_simulation,
    small_run,
)
from kairos.auxo.params import AuxoParams  # noqa: E402
from kairos.auxo.replay import SYSTEM, log_meta, replay, replay_log  # noqa: E402
from kairos.decisions import (  # noqa: E402
    LoadedLog,
    altered,
    first_divergence,
    is_plain,
    read_log,
)

N, GROUPS, ROUNDS, SEED, SPLIT_AT = 12, 2, 6, 0, 3


@pytest.fixture(scope="module")
def flower_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[AuxoStrategy, LoadedLog]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLWR_TELEMETRY_ENABLED", "0")
        if ray.is_initialized():  # another module's cluster must not host this run
            ray.shutdown()
        strategy, recipe, model, local = small_run(
            N, GROUPS, ROUNDS, k=2, p_total=8, seed=SEED, partition_schedule=(SPLIT_AT,)
        )
        path = tmp_path_factory.mktemp("auxo") / "decisions.jsonl"
        log = open_log(path, log_meta(strategy.params, SEED))
        strategy.policy.recorder = log
        try:
            run_auxo_simulation(strategy, recipe, model, local, seed=SEED, num_cpus=2)
        finally:
            log.close()
    return strategy, read_log(path, CODEC, system=SYSTEM)


def test_the_log_is_the_flower_runs_decisions(flower_run: tuple[AuxoStrategy, LoadedLog]) -> None:
    strategy, log = flower_run
    rounds = [e for e in log.entries if isinstance(e.record, CohortRound)]
    splits = [e for e in log.entries if isinstance(e.record, Split)]
    reports = [(r.round, leaf, rep) for r in strategy.history for leaf, rep in r.reports.items()]
    assert len(rounds) == len(reports) >= ROUNDS
    for entry, (server_round, leaf, report) in zip(rounds, reports, strict=True):
        rec = entry.record
        assert (entry.t, rec.cohort, rec.clients) == (server_round, leaf, report.client_ids)
        assert (rec.labels, rec.rewards, rec.status) == (
            report.labels,
            report.deltas,
            report.status,
        )
        assert len(rec.rows) == len(rec.clients) and is_plain(rec)
    assert [(e.record.parent, e.record.round) for e in splits] == [
        (s.parent, s.round) for s in strategy.policy.tree.splits
    ]
    assert [e.record.parent for e in splits] == ["0"]  # the scheduled split happened
    # the split's members: this round's participants (the server keeps no other record), by
    # the cluster index they were just given
    split_round = rounds[SPLIT_AT - 1].record
    assert split_round.split and min(split_round.labels) >= 0
    children = splits[0].record.children
    assert splits[0].record.members == {
        child: tuple(
            sorted(
                c
                for c, lab in zip(split_round.clients, split_round.labels, strict=True)
                if lab == j
            )
        )
        for j, child in enumerate(children)
    }
    assert any(e.record.rewards is not None for e in rounds)  # rewards after the split
    assert log.meta["seed"] == SEED and log.meta["params"]["k"] == 2


def test_the_replay_decides_as_the_flower_run_did(
    flower_run: tuple[AuxoStrategy, LoadedLog],
) -> None:
    _, log = flower_run
    recorded = log.entries
    replayed = replay_log(log)
    assert first_divergence(recorded, replayed) is None
    assert len(replayed) == len(recorded)

    # one decision altered in the log is found where it was altered
    split_round = next(i for i, e in enumerate(recorded) if isinstance(e.record, Split)) - 1
    assert recorded[split_round].record.split
    divergence = first_divergence(altered(recorded, split_round, split=False), replayed)
    assert divergence is not None and divergence.index == split_round
    last = len(recorded) - 1
    rewards = recorded[last].record.rewards
    assert rewards is not None
    bumped = altered(recorded, last, rewards=(rewards[0] + 1e-6, *rewards[1:]))
    divergence = first_divergence(bumped, replayed)
    assert divergence is not None and divergence.index == last

    # a changed input changes the decision: one client stops claiming a positive reward
    at, claim = next(
        (i, c)
        for i, e in enumerate(recorded)
        if isinstance(e.record, CohortRound) and e.record.rewards is not None
        for c in e.record.claims
        if c.reward is not None and c.reward > 0
    )
    record = recorded[at].record
    claims = tuple(dataclasses.replace(c, reward=0.0) if c == claim else c for c in record.claims)
    perturbed = altered(recorded, at, claims=claims)
    divergence = first_divergence(perturbed, replay(perturbed, _params(log), SEED))
    assert divergence is not None and divergence.index == at
    assert divergence.replayed is not None
    assert divergence.replayed.record.rewards != record.rewards

    # the same inputs under another policy (the split scheduled a round later) are decided
    # otherwise, from the scheduled round on
    later = _params(log).model_copy(update={"partition_schedule": (SPLIT_AT + 1,)})
    divergence = first_divergence(recorded, replay(recorded, later, SEED))
    assert divergence is not None and divergence.index == split_round
    assert divergence.replayed is not None and not divergence.replayed.record.split


def _params(log: LoadedLog) -> AuxoParams:
    return AuxoParams.model_validate(log.meta["params"])
