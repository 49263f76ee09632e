"""One Auxo cohort inside Flower: its own base strategy, its own model, its own view of the grid.

Auxo's promise is that each cohort runs an unchanged FL algorithm on its own members (spec
3.8). In Flower the algorithm is a `Strategy`, and a strategy picks its clients from the
`Grid` it is handed (`grid.get_node_ids()`, then `sample_nodes`). `CohortGrid` is therefore a
view that lists only the nodes matched to the cohort this round, so an unmodified FedAvg,
FedProx, FedAdam or FedYogi samples inside its cohort and nowhere else; a message addressed
outside the view is refused rather than sent. `CohortSlot` holds what a split copies: the
strategy object (with its server-optimizer state, e.g. FedAdam's moments) and the parameters.
`RoundLog` is what each cohort did in one round, kept for reports and tests.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from flwr.app import ArrayRecord, Message, RecordDict
from flwr.proto.node_pb2 import NodeInfo
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy
from flwr.supercore.run import Run

from kairos.auxo.policy import RoundReport
from kairos.auxo.tree import SplitRecord


class CohortGrid(Grid):
    """A cohort's view of the federation: the inner grid restricted to `node_ids`."""

    def __init__(self, inner: Grid, node_ids: Sequence[int]) -> None:
        self.inner = inner
        self.node_ids = tuple(int(n) for n in node_ids)
        self._allowed = frozenset(self.node_ids)

    def set_run(self, run: Run) -> None:
        self.inner.set_run(run)

    @property
    def run(self) -> Run:
        return self.inner.run

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        self._check([dst_node_id])
        return self.inner.create_message(content, message_type, dst_node_id, group_id, ttl)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.node_ids)

    def get_nodes(self) -> Iterable[NodeInfo]:
        return (NodeInfo(node_id=n) for n in self.node_ids)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        batch = list(messages)
        self._check(m.metadata.dst_node_id for m in batch)
        return self.inner.push_messages(batch)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return self.inner.pull_messages(message_ids)

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        batch = list(messages)
        self._check(m.metadata.dst_node_id for m in batch)
        return self.inner.send_and_receive(batch, timeout=timeout)

    def _check(self, nodes: Iterable[int]) -> None:
        outside = [n for n in nodes if n not in self._allowed]
        if outside:
            raise ValueError(f"nodes {outside} are not in this cohort's view")


def min_nodes(strategy: Strategy) -> int:
    """Fewest nodes a view must list for the strategy to sample without waiting forever.

    Flower's `sample_nodes` sleeps until `max(min_available_nodes, sample_size)` nodes are
    connected; a view never grows, so a cohort with fewer matched nodes sits the round out.
    """
    need = [getattr(strategy, name, 1) for name in ("min_train_nodes", "min_available_nodes")]
    return max(1, *(int(n) for n in need))


@dataclass
class CohortSlot:
    """A cohort's Flower side: the base strategy instance and the cohort's parameters."""

    strategy: Strategy
    arrays: ArrayRecord
    round_local: int = 0  # rounds this cohort (and its ancestors) trained; children copy it

    def child(self) -> CohortSlot:
        """A child at a split: exactly the parent's parameters, a copy of its strategy state."""
        return CohortSlot(
            copy.deepcopy(self.strategy), copy.deepcopy(self.arrays), self.round_local
        )


@dataclass
class RoundLog:
    """What one round did, per cohort (node ids are Flower's, clients are partition ids)."""

    round: int
    leaves: list[str]
    budgets: dict[str, int]
    requests: dict[str, list[int]] = field(default_factory=dict)  # leaf -> requesting nodes
    views: dict[str, list[int]] = field(default_factory=dict)  # leaf -> nodes its base saw
    replies: dict[str, list[int]] = field(default_factory=dict)  # leaf -> nodes it aggregated
    reports: dict[str, RoundReport] = field(default_factory=dict)
    splits: list[SplitRecord] = field(default_factory=list)
    feedback_acks: int = 0
