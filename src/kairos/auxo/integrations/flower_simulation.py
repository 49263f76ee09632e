"""Run an `AuxoStrategy` under Flower's own simulation engine (`run_simulation`, Ray backend).

The ServerApp runs the strategy's round loop in a thread of this process, so the strategy
object passed in holds the outcome afterwards (tree, history, membership, evaluations). The
ClientApps run in Ray actors: `num_cpus` Ray CPUs, `client_cpus` per actor. Flower's Ray
backend starts Ray when it is not running and shuts it down when the run ends.
"""

from __future__ import annotations

from typing import Any

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg, Result
from flwr.simulation import run_simulation

from kairos.auxo.integrations.flower import AuxoStrategy
from kairos.auxo.integrations.flower_client import FederatedRecipe, auxo_client_app, initial_arrays
from kairos.auxo.integrations.flower_exchange import ClientFailure
from kairos.auxo.params import AuxoParams
from kairos.fl.learning import LocalConfig, LogisticRegression, Model


def small_run(
    clients: int,
    groups: int,
    rounds: int,
    k: int = 2,
    p_total: int = 16,
    seed: int = 0,
    **auxo: Any,
) -> tuple[AuxoStrategy, FederatedRecipe, Model, LocalConfig]:
    """A synthetic federation of `groups` latent groups with their own labelling, a logistic
    regression, and Auxo over FedAvg (`auxo` overrides `AuxoParams` fields): what `kairos auxo
    run` trains. The whole update is clustered (a tiny model, spec 3.1)."""
    recipe = FederatedRecipe.of(
        "synthetic",
        clients,
        seed=seed,
        n_groups=groups,
        alpha=1.0,
        beta=0.0,
        min_count=60,
        count_median=80,
    )
    fields: dict[str, Any] = {
        "k": k,
        "p_total": p_total,
        "total_rounds": rounds,
        "n_clients": clients,
        "het_rule": "J",
        "grad_fraction": 1.0,
        "feature_dtype": "float32",
    }
    params = AuxoParams(**{**fields, **auxo})
    strategy = AuxoStrategy(FedAvg(fraction_evaluate=0.0), params, seed=seed)
    return (
        strategy,
        recipe,
        LogisticRegression(60, 10),
        LocalConfig(lr=0.05, batch_size=20, steps=10),
    )


def run_auxo_simulation(
    strategy: AuxoStrategy,
    recipe: FederatedRecipe,
    model: Model,
    local: LocalConfig | None = None,
    *,
    seed: int = 0,
    num_cpus: int = 2,
    client_cpus: float = 1.0,
) -> Result:
    """Train `recipe`'s clients with Auxo for `strategy.params.total_rounds` Flower rounds;
    `ClientFailure` when every client of a round failed (the first client's error in it)."""
    local = local or LocalConfig()
    results: list[Result] = []
    failures: list[ClientFailure] = []
    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        arrays = initial_arrays(model, seed)
        try:
            results.append(strategy.start(grid, arrays, num_rounds=strategy.params.total_rounds))
        except ClientFailure as exc:  # Flower logs a ServerApp's exception and returns
            failures.append(exc)
            raise

    client = auxo_client_app(recipe, model, strategy.params, local, seed)
    run_simulation(
        server_app=server,
        client_app=client,
        num_supernodes=recipe.n_clients,
        backend_config={
            "init_args": {"num_cpus": num_cpus, "include_dashboard": False},
            "client_resources": {"num_cpus": client_cpus, "num_gpus": 0.0},
        },
    )
    if failures:
        raise failures[0]
    if not results:
        raise RuntimeError("the Flower ServerApp ended without a result (see Flower's log)")
    return results[0]
