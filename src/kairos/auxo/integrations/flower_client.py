"""Clients of a `kairos.fl.learning` dataset as a Flower ClientApp running Auxo.

They train exactly as plain Flower clients do (the local SGD of `kairos.fl.learning` on their
own partition, FedProx's `proximal-mu` honoured when a FedProx base strategy sends it) and
carry the Auxo client library (`flower_affinity`): check-in, feedback, and evaluation of the
cohort they belong to.

Flower ships the ClientApp to its Ray actors with every message, so the app carries only a
small `FederatedRecipe`; each actor process builds the dataset once from it (the same seed
gives the same clients as everywhere else).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from kairos.auxo.integrations.flower_affinity import (
    TRAIN,
    add_auxo_handlers,
    client_id,
    client_rng,
    cohort_to_evaluate,
    reply,
)
from kairos.auxo.integrations.flower_records import (
    AUXO,
    COHORT,
    flatten,
    float_field,
    int_field,
    unflatten_like,
)
from kairos.auxo.params import AuxoParams
from kairos.fl.learning import (
    FederatedDataset,
    LocalConfig,
    Model,
    federated_digits,
    federated_synthetic,
    local_train,
)


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
    app = add_auxo_handlers(ClientApp(), params, seed)

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
            client_rng(seed, cid, r, TRAIN),
        )
        metrics = MetricRecord({"num-examples": result.n_samples, "train-loss": result.train_loss})
        return reply(
            message,
            arrays=unflatten_like(w_global - result.update, arrays),
            metrics=metrics,
        )

    @app.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        arrays, choice = cohort_to_evaluate(message, context, params)
        w = flatten(arrays)
        data = recipe.build().clients[client_id(context)]
        metrics = MetricRecord(
            {
                "num-examples": data.n_test,
                "accuracy": model.accuracy(w, data.x_test, data.y_test),
                "loss": model.loss(w, data.x_test, data.y_test),
            }
        )
        return reply(message, metrics=metrics, **{AUXO: choice})

    return app


def initial_arrays(model: Model, seed: int = 0) -> ArrayRecord:
    """The root cohort's starting parameters as a one-array Flower record."""
    return ArrayRecord([model.init(np.random.default_rng([seed, 9]))])
