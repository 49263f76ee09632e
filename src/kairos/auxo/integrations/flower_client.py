"""The Auxo client library as a Flower ClientApp (spec 2.2, bottom row; 3.10, distributed mode).

A client trains exactly as a plain Flower client does (local SGD of `kairos.fl.learning` on its
own partition, FedProx's `proximal-mu` honoured when a FedProx base strategy sends it) and, in
addition, keeps its affinity record in its own Flower state (`context.state`), never on the
server. Four handlers:

* `query.auxo_checkin`: learn the current tree, apply reward inheritance for splits not yet
  seen, choose a leaf by decaying epsilon-greedy and reply with the affinity request
  (cohort, claimed L, claimed R);
* `train`: local training from the cohort's model; the reply is the new local parameters;
* `query.auxo_feedback`: exploit/explore update of its own record with the cohort's dR and
  copy of its new cluster index (tree distances from the dotted ids), then catch up on splits;
* `evaluate`: pick its cohort (highest reward) among the leaf models it receives, score that
  model on its own test split and say which cohort it chose.

Flower ships the ClientApp to its Ray actors with every message, so the app carries only a
small `FederatedRecipe`; each actor process builds the dataset once from it (the same seed
gives the same clients as everywhere else). Client randomness is one stream per (client,
round, purpose), so a run does not depend on which actor served which message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from kairos.auxo.engine import best_leaf
from kairos.auxo.integrations.flower_records import (
    ARRAYS_PREFIX,
    AUXO,
    COHORT,
    NO_LABEL,
    auxo_config,
    catch_up,
    decode_splits,
    flatten,
    float_field,
    int_field,
    load_record,
    save_record,
    str_field,
    unflatten_like,
)
from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import apply_feedback
from kairos.auxo.selection import select_cohort
from kairos.fl.learning import (
    FederatedDataset,
    LocalConfig,
    Model,
    federated_digits,
    federated_synthetic,
    local_train,
)

_CHOOSE, _TRAIN = 0, 1  # purposes of the per-client random streams


@dataclass(frozen=True)
class FederatedRecipe:
    """How to rebuild a `kairos.fl.learning` dataset: generator, population, seed, options."""

    kind: Literal["synthetic", "digits"]
    n_clients: int
    seed: int = 0
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(
        cls, kind: Literal["synthetic", "digits"], n_clients: int, seed: int = 0, **options: Any
    ) -> FederatedRecipe:
        return cls(kind, n_clients, seed, tuple(sorted(options.items())))

    def build(self) -> FederatedDataset:
        """The dataset (cached per process: every actor builds it once)."""
        return _build(self)


@lru_cache(maxsize=4)
def _build(recipe: FederatedRecipe) -> FederatedDataset:
    rng = np.random.default_rng(recipe.seed)
    make = federated_synthetic if recipe.kind == "synthetic" else federated_digits
    return make(recipe.n_clients, rng, **dict(recipe.options))


def client_id(context: Context) -> int:
    """The client's stable id: its Flower partition id (node ids are random per run)."""
    return int(context.node_config["partition-id"])


def client_rng(seed: int, client: int, round: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed, 7, client, round, purpose])


def _reply(message: Message, **records: Any) -> Message:
    return Message(RecordDict(records), reply_to=message)


def _train_config(content: RecordDict) -> ConfigRecord:
    """The base strategy's config record: the one that names the cohort."""
    for record in content.config_records.values():
        if COHORT in record:
            return record
    raise ValueError("a train message must carry its cohort id in its config record")


def auxo_client_app(
    recipe: FederatedRecipe,
    model: Model,
    params: AuxoParams,
    local: LocalConfig | None = None,
    seed: int = 0,
) -> ClientApp:
    """A Flower ClientApp of Auxo clients holding the partitions of `recipe`'s dataset."""
    local = local or LocalConfig()
    app = ClientApp()

    @app.query("auxo_checkin")
    def checkin(message: Message, context: Context) -> Message:
        cid = client_id(context)
        cfg = auxo_config(message.content)
        record = load_record(context.state)
        leaves = catch_up(record, decode_splits(str_field(cfg, "splits")), params)
        r = int_field(cfg, "round")
        choice = select_cohort(record, leaves, r, params, client_rng(seed, cid, r, _CHOOSE))
        save_record(context.state, record)
        entry = record.get(choice)
        label = NO_LABEL if entry is None or entry.label is None else entry.label
        reward = 0.0 if entry is None else entry.reward
        request = ConfigRecord({"cohort": choice, "label": label, "reward": reward, "client": cid})
        return _reply(message, **{AUXO: request})

    @app.query("auxo_feedback")
    def feedback(message: Message, context: Context) -> Message:
        cfg = auxo_config(message.content)
        record = load_record(context.state)
        leaves = catch_up(record, decode_splits(str_field(cfg, "before")), params)
        delta = float_field(cfg, "delta")
        label = int_field(cfg, "label")
        apply_feedback(
            record,
            str_field(cfg, "cohort"),
            None if math.isnan(delta) else delta,
            None if label == NO_LABEL else label,
            leaves,
            params,
        )
        catch_up(record, decode_splits(str_field(cfg, "after")), params)
        save_record(context.state, record)
        return _reply(message, **{AUXO: ConfigRecord({"applied": True})})

    @app.train()
    def train(message: Message, context: Context) -> Message:
        cid = client_id(context)
        cfg = _train_config(message.content)
        (arrays,) = message.content.array_records.values()
        w_global = flatten(arrays)
        mu = float_field(cfg, "proximal-mu") if "proximal-mu" in cfg else local.mu
        r = int_field(cfg, "server-round") if "server-round" in cfg else 0
        data = recipe.build().clients[cid]
        result = local_train(
            model,
            w_global,
            data,
            local.model_copy(update={"mu": mu}),
            client_rng(seed, cid, r, _TRAIN),
        )
        metrics = MetricRecord({"num-examples": result.n_samples, "train-loss": result.train_loss})
        return _reply(
            message,
            arrays=unflatten_like(w_global - result.update, arrays),
            metrics=metrics,
        )

    @app.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        cid = client_id(context)
        cfg = auxo_config(message.content)
        record = load_record(context.state)
        leaves = catch_up(record, decode_splits(str_field(cfg, "splits")), params)
        save_record(context.state, record)
        leaf = best_leaf(record, leaves)
        w = flatten(message.content.array_records[ARRAYS_PREFIX + leaf])
        data = recipe.build().clients[cid]
        metrics = MetricRecord(
            {
                "num-examples": data.n_test,
                "accuracy": model.accuracy(w, data.x_test, data.y_test),
                "loss": model.loss(w, data.x_test, data.y_test),
            }
        )
        choice = ConfigRecord({"cohort": leaf, "client": cid})
        return _reply(message, metrics=metrics, **{AUXO: choice})

    return app


def initial_arrays(model: Model, seed: int = 0) -> ArrayRecord:
    """The root cohort's starting parameters as a one-array Flower record."""
    return ArrayRecord([model.init(np.random.default_rng([seed, 9]))])
