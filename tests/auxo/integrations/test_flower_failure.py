"""A Flower run whose clients all fail stops with their error instead of reporting nothing.

A model that does not fit the data (a logistic regression over 30 features on clients holding
60) raises in every ClientApp; Flower turns each into an error reply. Without the check the
run finished 'successfully' with no membership and empty metrics.
"""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")
ray = pytest.importorskip("ray")

from flwr.app import Error, Message, RecordDict  # noqa: E402
from flwr.common.constant import SUPERLINK_NODE_ID  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from kairos.auxo.integrations.flower_exchange import ClientFailure, check_replies  # noqa: E402
from kairos.auxo.integrations.flower_simulation import run_auxo_simulation, small_run  # noqa: E402
from kairos.fl.learning import LogisticRegression  # noqa: E402


def _reply(ok: bool) -> Message:
    # Flower stamps a Message with the task creating it, which its engine sets
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SUPERLINK_NODE_ID
    sent = Message(content=RecordDict(), message_type="train", dst_node_id=7)
    if ok:
        return Message(RecordDict(), reply_to=sent)
    return Message(Error(code=0, reason="shapes do not match"), reply_to=sent)


def test_a_round_fails_only_when_every_client_failed() -> None:
    check_replies(1, "training", [])
    check_replies(1, "training", [_reply(True), _reply(False)])
    expected = "round 3: all 2 clients failed in training; node 7: shapes do not match"
    with pytest.raises(ClientFailure, match=expected):
        check_replies(3, "training", [_reply(False), _reply(False)])


def test_a_mismatched_model_stops_the_flower_run_with_the_clients_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    strategy, recipe, model, local = small_run(clients=6, groups=2, rounds=3, p_total=4)
    assert isinstance(model, LogisticRegression) and model.n_features == 60
    with pytest.raises(ClientFailure, match=r"round 1: all \d+ clients failed in training") as e:
        run_auxo_simulation(strategy, recipe, LogisticRegression(30, 10), local, num_cpus=2)
    assert str(e.value).endswith("(size 30 is different from 60)"), e.value  # numpy's words
    assert not ray.is_initialized()
