"""Replaying a decision log through Auxo's policy, the decision core the simulator also runs.

A Flower run's server keeps no per-client state (spec 3.10): each cohort-round it feeds the
policy (`AuxoPolicy.observe_claims`) the participants' claimed L and R and their
updates, and the policy clusters, rewards and decides whether to split. The log's `CohortRound`
records hold exactly those inputs, so a fresh policy built from the log's params and seed, fed
them in order on the same path, must decide the same labels, rewards, splits and merges; the
records it makes are compared with the log's by `kairos.decisions.first_divergence`. `Split`
and `Merge` entries are outputs only: the replay makes its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import ValidationError

from kairos.auxo.decisions import CohortRound
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import AuxoPolicy
from kairos.decisions import DecisionLogError, Entries, Entry, LoadedLog

SYSTEM = "auxo"


def log_meta(params: AuxoParams, seed: int) -> dict[str, Any]:
    """What a replay needs besides the entries: the policy's params and seed."""
    return {"params": params.model_dump(mode="json"), "seed": int(seed)}


def replay(entries: Iterable[Entry], params: AuxoParams, seed: int) -> Entries:
    """The decisions a fresh policy makes from the recorded cohort-rounds' inputs."""
    out = Entries()
    policy = AuxoPolicy(params, seed=seed, recorder=out)
    for i, (t, record) in enumerate(entries):
        if not isinstance(record, CohortRound):
            continue
        if not policy.tree.is_leaf(record.cohort):
            break  # the replay's tree went another way: the comparison shows where
        try:
            rows = np.array(record.rows, dtype=np.float64)
            policy.observe_claims(record.cohort, record.round, record.claims, rows, t=t)
        except ValueError as e:
            raise DecisionLogError(
                f"decision {i} (cohort {record.cohort}, round {record.round}) cannot be "
                f"replayed: {e}"
            ) from None
    return out


def replay_log(log: LoadedLog) -> Entries:
    """`replay` with the params and seed the log's header names."""
    try:
        params = AuxoParams.model_validate(log.meta["params"])
        seed = int(log.meta["seed"])
    except KeyError as e:
        raise DecisionLogError(f"the log's header names no {e.args[0]!r}: cannot replay") from None
    except (ValidationError, TypeError, ValueError) as e:
        raise DecisionLogError(f"the log's header holds unusable Auxo params: {e}") from None
    return replay(log.entries, params, seed)
