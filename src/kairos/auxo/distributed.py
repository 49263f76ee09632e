"""Distributed Auxo (spec 3.10): affinity records live on the clients, the server is soft state.

A `ClientAgent` holds its own record (R, L, explored per cohort) and its own random stream. It
chooses a leaf locally (COHORTSELECTION), sends the claimed L and R for it in its affinity
request, applies a cohort's feedback (dR and the new L) itself, with tree distances computed
from the dotted ids, and inherits rewards when it hears of a split. The coordinator
(`DistributedPolicy`) keeps the cohort tree, the models, the clustering state and *this round's*
requests only: the claims that a cohort's round needs as clustering inputs, dropped once used.

The three conditions under which this mode and the centralized one give the same trajectory
for a seed hold by construction: a client learns the current leaves at check-in, before it
chooses; a split is broadcast and every client inherits at that moment, not lazily; and every
draw a client causes (the epsilon-greedy pick, MATCH's uniform child) comes from its own stream,
seeded exactly as the centralized policy seeds it.

`ClientNetwork` is the simulated population of client devices, the "far side" of the
messages. The coordinator reaches a client only through a message (request, feedback, split
broadcast, membership query); it never reads a record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kairos.auxo.clustering import NO_LABEL
from kairos.auxo.decisions import Claim, split_members
from kairos.auxo.matching import AffinityRequest
from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import AuxoPolicy, best_leaf
from kairos.auxo.rewards import AffinityEntry, apply_feedback, inherit
from kairos.auxo.selection import select_cohort
from kairos.auxo.split_labels import place_at_split
from kairos.auxo.training import CohortTraining


@dataclass
class ClientAgent:
    """One client's own Auxo state: its affinity record and its random stream."""

    client_id: int
    rng: np.random.Generator
    record: dict[str, AffinityEntry] = field(default_factory=dict)

    def request(self, leaves: list[str], round: int, params: AuxoParams) -> AffinityRequest:
        """Choose a leaf among the current ones and claim its L and R there."""
        choice = select_cohort(self.record, leaves, round, params, self.rng)
        entry = self.record.get(choice)
        return AffinityRequest(
            self.client_id,
            choice,
            None if entry is None else entry.label,
            None if entry is None else entry.reward,
        )

    def feedback(
        self,
        cohort: str,
        delta: float | None,
        label: int | None,
        leaves: list[str],
        params: AuxoParams,
    ) -> None:
        apply_feedback(self.record, cohort, delta, label, leaves, params)

    def heard_split(self, parent: str, children: tuple[str, ...], params: AuxoParams) -> None:
        inherit(self.record, parent, children, params)

    def membership(self, leaves: list[str]) -> str:
        return best_leaf(self.record, leaves)

    def place_unlabelled(
        self, leaves: list[str], ask: Callable[[str], int | None], params: AuxoParams
    ) -> list[tuple[str, int]]:
        """Option `unlabelled_at_split="probe"`: the device resolves its own tie by probes."""
        return place_at_split(self.record, leaves, ask, params.split_bonus)


@dataclass
class ClientNetwork:
    """The client devices; an agent exists once the coordinator has first heard from it."""

    seed: int
    agents: dict[int, ClientAgent] = field(default_factory=dict)

    def agent(self, client_id: int) -> ClientAgent:
        c = int(client_id)
        if c not in self.agents:
            self.agents[c] = ClientAgent(c, np.random.default_rng([self.seed, 0, c]))
        return self.agents[c]

    def broadcast_split(self, parent: str, children: tuple[str, ...], params: AuxoParams) -> None:
        for a in self.agents.values():
            a.heard_split(parent, children, params)


@dataclass
class DistributedPolicy(AuxoPolicy):
    """The soft-state coordinator: no per-client table, claims travel in the requests."""

    clients: ClientNetwork = field(init=False)
    claims: dict[int, AffinityRequest] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.clients = ClientNetwork(self.seed)

    def record(self, client_id: int) -> dict[str, AffinityEntry]:
        raise RuntimeError("distributed Auxo: the coordinator holds no affinity records")

    def client_rng(self, client_id: int) -> np.random.Generator:
        """MATCH's uniform child is drawn by the requesting client (carried in its request)."""
        return self.clients.agent(client_id).rng

    def request(self, client_id: int, round: int) -> AffinityRequest:
        req = self.clients.agent(client_id).request(self.tree.leaves(), round, self.params)
        self.claims[int(client_id)] = req
        return req

    def membership(self, client_ids: Sequence[int]) -> dict[int, str]:
        leaves = self.tree.leaves()
        return {int(c): self.clients.agent(c).membership(leaves) for c in client_ids}

    def forget(self, client_id: int) -> None:
        """The device lost its own record; its random stream carries on."""
        self.clients.agent(client_id).record.clear()

    def place_unlabelled(
        self, client_id: int, ask: Callable[[str], int | None]
    ) -> list[tuple[str, int]]:
        """The client decides from its own record; the coordinator only answers its probes
        from the per-cohort split frames (no per-client state)."""
        return self.clients.agent(client_id).place_unlabelled(self.tree.leaves(), ask, self.params)

    def _claims(self, cohort: str, ids: Sequence[int]) -> list[Claim]:
        out = []
        for c in ids:
            req = self.claims.pop(int(c), None)
            if req is None or req.cohort_id != cohort:
                out.append(Claim(int(c), None, None))  # no claim for this cohort: a new member
            else:
                reward = None if req.reward is None else float(req.reward)
                out.append(Claim(int(c), req.label, reward))
        return out

    def _assignment(self, parent: str, children: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
        """Read from the devices' records (the cohort change a log records, not a decision
        input: each device applies its inheritance itself)."""
        records = {c: a.record for c, a in self.clients.agents.items()}
        return split_members(records, parent, children)

    def _feedback(
        self, client_id: int, cohort: str, delta: float | None, label: int, leaves: list[str]
    ) -> None:
        lab = label if label != NO_LABEL else None
        self.clients.agent(client_id).feedback(cohort, delta, lab, leaves, self.params)

    def _inherit(self, parent: str, children: tuple[str, ...]) -> None:
        self.clients.broadcast_split(parent, children, self.params)

    def _members(self, cohort: str) -> int:
        """The optional merge's member count: each client reports its membership leaf."""
        leaves = self.tree.leaves()
        return sum(a.membership(leaves) == cohort for a in self.clients.agents.values())


def distributed(run: CohortTraining) -> CohortTraining:
    """Switch a freshly built `CohortTraining` to distributed Auxo (before its first step)."""
    if run.log or run.policy.records:
        raise ValueError("switch modes before the run starts")
    old = run.policy
    run.policy = DistributedPolicy(
        old.params, seed=old.seed, weights=old.weights, recorder=old.recorder
    )
    return run
