"""Real federated training on the `kairos.fl` substrate: data, models, clients, servers, rounds.

Offline federated datasets with hidden ground-truth groups (digits with per-group label
permutations or rotations, LEAF-style Synthetic(alpha, beta)), numpy models over flat weight
vectors, local SGD (with FedProx's proximal term), the server algorithms FedAvg, FedProx,
q-FedAvg and FedYoGi, a round runner on the FedScale-like clock (device speeds, availability,
over-commitment, deadline), and the paper's metrics. Auxo's cohorts are built on top: each
cohort is a `TrainingState` driven by the same `RoundRunner`.
"""

from kairos.fl.learning.aggregators import (
    Aggregator,
    Algorithm,
    AlgorithmName,
    FedAvg,
    FedYoGi,
    QFedAvg,
    make_algorithm,
    weighted_mean,
)
from kairos.fl.learning.clock import (
    AlwaysOnline,
    Availability,
    BernoulliAvailability,
    ClientClock,
    SessionAvailability,
    device_population,
)
from kairos.fl.learning.corruption import flip_labels, flipped_label
from kairos.fl.learning.dataset import ClientData, FederatedDataset
from kairos.fl.learning.digits import federated_digits, group_permutations, load_digits_arrays
from kairos.fl.learning.local import (
    ClientScores,
    LocalConfig,
    LocalUpdate,
    evaluate_clients,
    local_train,
    local_train_many,
)
from kairos.fl.learning.metrics import (
    AccuracyStats,
    EvalPoint,
    History,
    participant_rounds_to_accuracy,
    speedup,
    time_to_accuracy,
)
from kairos.fl.learning.models import MLP, LogisticRegression, Model, make_model
from kairos.fl.learning.partition import (
    assign_groups,
    dirichlet_partition,
    lognormal_counts,
    split_client,
)
from kairos.fl.learning.personalize import fine_tuned_scores
from kairos.fl.learning.rounds import (
    RoundConfig,
    RoundResult,
    RoundRunner,
    TrainingState,
    train,
    uniform_selector,
)
from kairos.fl.learning.synthetic import federated_synthetic

__all__ = [
    "MLP",
    "AccuracyStats",
    "Aggregator",
    "Algorithm",
    "AlgorithmName",
    "AlwaysOnline",
    "Availability",
    "BernoulliAvailability",
    "ClientClock",
    "ClientData",
    "ClientScores",
    "EvalPoint",
    "FedAvg",
    "FedYoGi",
    "FederatedDataset",
    "History",
    "LocalConfig",
    "LocalUpdate",
    "LogisticRegression",
    "Model",
    "QFedAvg",
    "RoundConfig",
    "RoundResult",
    "RoundRunner",
    "SessionAvailability",
    "TrainingState",
    "assign_groups",
    "device_population",
    "dirichlet_partition",
    "evaluate_clients",
    "federated_digits",
    "federated_synthetic",
    "fine_tuned_scores",
    "flip_labels",
    "flipped_label",
    "group_permutations",
    "load_digits_arrays",
    "local_train",
    "local_train_many",
    "lognormal_counts",
    "make_algorithm",
    "make_model",
    "participant_rounds_to_accuracy",
    "speedup",
    "split_client",
    "time_to_accuracy",
    "train",
    "uniform_selector",
    "weighted_mean",
]
