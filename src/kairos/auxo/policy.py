"""Auxo's policy: the decision core that a driver feeds each cohort's round.

The drivers (`CohortTraining` on the simulated clock, `AuxoStrategy` inside Flower) train the
cohorts and carry out what this object decides: each participant's cluster index and reward,
and whether a cohort splits (or, optionally, merges). It holds what those decisions read: the
cohort tree, the partition monitors and, in centralized mode, the affinity records.

It composes the pure pieces in the order of the round lifecycle (spec 2.3, stage 4): build
features from the participants' updates, CLIENTCLUSTERING, exploitation/exploration rewards when
M > 1 (applied to each participant's affinity record, as the client would), then the partition
decision; a split replaces the leaf by K children that start from exactly its weights, and every
record inherits rewards at that moment (spec 3.10: the same moment in both modes).

What it is given is the whole of what it can see: cohort ids, client ids, update vectors, round
counters. It never receives client data or labels. Randomness: one generator per client (the
epsilon-greedy pick) and one per cohort (k-means++ seeding), all derived from `seed`, so a run is
a pure function of its inputs. No clock, no I/O: with a `recorder`, each cohort-round and
cohort change is handed to it as a plain record (`kairos.auxo.decisions`) stamped with the time
the driver passes in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from kairos.auxo.assignment import LeafProbeFrame
from kairos.auxo.clustering import NO_LABEL, Status, cluster_round
from kairos.auxo.criteria import Decision, HetStats, PartitionMonitor, decide_partition
from kairos.auxo.decisions import (
    Claim,
    LateRewards,
    Merge,
    Split,
    cohort_round,
    rows_of,
    split_members,
)
from kairos.auxo.features import compress, compress_rows, frame_of
from kairos.auxo.matching import AffinityRequest
from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import AffinityEntry, apply_feedback, inherit, instant_rewards
from kairos.auxo.selection import select_cohort
from kairos.auxo.split_labels import SplitFrame, SplitFrames, place_at_split
from kairos.auxo.tree import CohortTree, SplitRecord
from kairos.decisions import Recorder


@dataclass(frozen=True)
class RoundReport:
    """What one cohort-round produced: the feedback sent to participants and the decision."""

    cohort: str
    client_ids: tuple[int, ...]
    labels: tuple[int, ...]  # NO_LABEL = N/A
    deltas: tuple[float, ...] | None  # instant rewards, None when skipped
    status: Status
    stats: HetStats | None
    decision: Decision | None
    split: SplitRecord | None


def best_leaf(record: dict[str, AffinityEntry], leaves: Sequence[str]) -> str:
    """Deterministic membership S_i: highest reward, ties to the first id (for evaluation)."""
    values = [record[c].reward if c in record else 0.0 for c in leaves]
    return leaves[int(np.argmax(values))]


@dataclass
class AuxoPolicy:
    """Cohort tree, affinity records (a server table in centralized mode) and clustering state."""

    params: AuxoParams
    seed: int = 0
    weights: np.ndarray | None = None
    recorder: Recorder | None = None
    tree: CohortTree = field(init=False)
    records: dict[int, dict[str, AffinityEntry]] = field(init=False, default_factory=dict)
    monitors: dict[str, PartitionMonitor] = field(init=False, default_factory=dict)
    initialised: dict[str, bool] = field(init=False, default_factory=dict)
    probe_frames: dict[str, LeafProbeFrame] = field(init=False, default_factory=dict)
    split_frames: SplitFrames | None = field(init=False, default=None)  # unlabelled_at_split
    _client_rngs: dict[int, np.random.Generator] = field(init=False, default_factory=dict)
    _cohort_rngs: dict[str, np.random.Generator] = field(init=False, default_factory=dict)
    _small_rounds: dict[str, int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.tree = CohortTree(self.weights, max_leaves=self.params.max_leaves)
        self.monitors["0"] = PartitionMonitor(self.params.k, 0)
        self.initialised["0"] = False
        if self.params.unlabelled_at_split == "probe":
            self.split_frames = SplitFrames()
            self.split_frames.note_start("0", self.tree.weights("0"))

    # ----------------------------------------------------------------- client side
    def client_rng(self, client_id: int) -> np.random.Generator:
        """The client's own stream (spec 3.10: MATCH and selection draw from it)."""
        if client_id not in self._client_rngs:
            self._client_rngs[client_id] = np.random.default_rng([self.seed, 0, int(client_id)])
        return self._client_rngs[client_id]

    def record(self, client_id: int) -> dict[str, AffinityEntry]:
        return self.records.setdefault(int(client_id), {})

    def select(self, client_id: int, round: int) -> str:
        """COHORTSELECTION: the leaf this client asks to train with at global round `round`."""
        return select_cohort(
            self.record(client_id),
            self.tree.leaves(),
            round,
            self.params,
            self.client_rng(client_id),
        )

    def request(self, client_id: int, round: int) -> AffinityRequest:
        """The client's check-in: its chosen leaf with its claimed L and R there (spec 3.10)."""
        choice = self.select(client_id, round)
        entry = self.record(client_id).get(choice)
        return AffinityRequest(
            int(client_id),
            choice,
            None if entry is None else entry.label,
            None if entry is None else entry.reward,
        )

    def forget(self, client_id: int) -> None:
        """The client lost its affinity record (spec 3.11): it starts again as a new client."""
        self.records.pop(int(client_id), None)

    def membership(self, client_ids: Sequence[int]) -> dict[int, str]:
        leaves = self.tree.leaves()
        return {int(c): best_leaf(self.record(c), leaves) for c in client_ids}

    def budgets(self) -> dict[str, int]:
        """Participants per round of each leaf; they sum to P_total."""
        return self.tree.budgets(self.params.p_total)

    # ----------------------------------------------------------------- cohort side
    def _cohort_rng(self, cohort: str) -> np.random.Generator:
        if cohort not in self._cohort_rngs:
            path = [int(p) for p in cohort.split(".")]
            self._cohort_rngs[cohort] = np.random.default_rng([self.seed, 1, len(path), *path])
        return self._cohort_rngs[cohort]

    def observe(
        self,
        cohort: str,
        round_local: int,
        client_ids: Sequence[int],
        updates: np.ndarray,
        *,
        t: float = 0.0,
    ) -> RoundReport:
        """Stage 4 of one cohort-round: cluster, reward, decide; returns the feedback sent."""
        u = np.asarray(updates)
        self._check(cohort, client_ids, u)
        p = self.params
        rows = compress_rows(u, p.grad_fraction, p.feature_dtype)
        return self.observe_rows(cohort, round_local, client_ids, rows, t=t)

    def observe_claims(
        self,
        cohort: str,
        round_local: int,
        claims: Sequence[Claim],
        rows: np.ndarray,
        *,
        t: float = 0.0,
    ) -> RoundReport:
        """A cohort-round of the soft-state server (spec 3.10), fed only the participants'
        claimed L and R: the record table holds those claims for the round, then is emptied,
        so nothing per client outlives it. A Flower run's rounds and their replay from a
        decision log both come through here."""
        for claim in claims:
            entry = {}
            if claim.reward is not None:
                entry[cohort] = AffinityEntry(claim.reward, claim.label, False)
            self.records[int(claim.client)] = entry
        try:
            return self.observe_rows(cohort, round_local, [c.client for c in claims], rows, t=t)
        finally:
            self.records.clear()

    def _check(self, cohort: str, client_ids: Sequence[int], updates: np.ndarray) -> None:
        if not self.tree.is_leaf(cohort):
            raise ValueError(f"cohort {cohort!r} is not a leaf; MATCH sends clients to leaves")
        ids = [int(c) for c in client_ids]
        if len(set(ids)) != len(ids):
            raise ValueError("a client can appear once per cohort-round")
        if updates.ndim != 2 or updates.shape[0] != len(ids):
            raise ValueError("updates must be one row per client id")

    def observe_rows(
        self,
        cohort: str,
        round_local: int,
        client_ids: Sequence[int],
        rows: np.ndarray,
        *,
        t: float = 0.0,
    ) -> RoundReport:
        """`observe` from the updates already compressed (`features.compress_rows`): the rows a
        decision log holds."""
        rows = np.asarray(rows, dtype=np.float64)
        self._check(cohort, client_ids, rows)
        ids = [int(c) for c in client_ids]
        p = self.params
        frame = frame_of(rows, p.feature_norm)
        claims = self._claims(cohort, ids)
        claimed = np.array([NO_LABEL if c.label is None else c.label for c in claims])
        known = np.array([c.reward is not None and c.reward > 0 for c in claims], dtype=bool)
        out = cluster_round(
            frame.features,
            claimed,
            initialised=self.initialised[cohort],
            round_local=round_local,
            params=p,
            rng=self._cohort_rng(cohort),
        )
        self.initialised[cohort] = out.initialised
        if self.split_frames is not None:  # the driver stored this round's result already
            w = self.tree.weights(cohort)
            self.split_frames.keep(cohort, round_local, frame, out.centroids, w)
        monitor = self.monitors[cohort]
        stats = None
        if out.status in ("initialised", "relabelled", "frozen"):
            stats = monitor.observe(np.array(ids), frame.features, out.labels, p)
        elif out.status == "empty_cluster":
            monitor.streak = 0

        leaves = self.tree.leaves()
        deltas: np.ndarray | None = None
        if len(leaves) > 1:
            res = instant_rewards(frame.features, known, p)
            if res is not None:
                deltas, rframe = res
                self.probe_frames[cohort] = LeafProbeFrame(frame, rframe)
        for i, c in enumerate(ids):
            lab = int(out.labels[i])
            self._feedback(c, cohort, None if deltas is None else float(deltas[i]), lab, leaves)

        decision = None
        split = None
        if self.initialised[cohort]:
            decision = decide_partition(
                monitor, round_local=round_local, m_leaves=len(leaves), params=p
            )
        report = RoundReport(
            cohort,
            tuple(ids),
            tuple(int(x) for x in out.labels),
            None if deltas is None else tuple(float(x) for x in deltas),
            out.status,
            stats,
            decision,
            None,
        )
        if self.recorder is not None:
            record = cohort_round(report, round_local, claims, rows)
            self.recorder.record(t, record)
        if decision is not None and decision.split and self.tree.can_split(cohort, p.k):
            split = self._split(cohort, round_local, t)
            report = replace(report, split=split)
        if split is None:
            self._maybe_merge(cohort, t)
        return report

    # ------------------------------------- option unlabelled_at_split="probe" (not the text)
    def split_frame(self, split: str) -> SplitFrame | None:
        """What a probe of split cohort `split` trains from and is compared with."""
        if self.split_frames is None or split not in self.tree or self.tree.is_leaf(split):
            return None
        return self.split_frames.frames.get(split)

    def probe_label(self, split: str, update: np.ndarray) -> int | None:
        """Coordinator side of a probe: the label `split`'s last clustering round would have
        given this update (nearest of its centroids, in its frame)."""
        frame = self.split_frame(split)
        if frame is None:
            return None
        p = self.params
        return frame.label(compress(update, p.grad_fraction, p.feature_dtype))

    def place_unlabelled(
        self, client_id: int, ask: Callable[[str], int | None]
    ) -> list[tuple[str, int]]:
        """Client side, at check-in: resolve a tie over a split's children where the client
        has no label by probing that split (`kairos.auxo.split_labels`)."""
        record = self.record(client_id)
        return place_at_split(record, self.tree.leaves(), ask, self.params.split_bonus)

    def observe_late(
        self, cohort: str, client_ids: Sequence[int], updates: np.ndarray, *, t: float = 0.0
    ) -> tuple[float, ...]:
        """Option `straggler_feedback` (not the source): exploitation rewards for updates that
        arrived after the round's P-th (over-commitment drops them from aggregation). Each is
        scored in the frame of the round just observed (its mean, centre and tau, as a new
        client's probe is, spec 3.9), without moving that frame or the clustering; the client
        gets dR and the usual exploration update, but no new cluster index. Call it right after
        `observe` of the same round, and only when that round produced rewards."""
        frame = self.probe_frames.get(cohort)
        if frame is None or not self.tree.is_leaf(cohort):
            raise ValueError(f"cohort {cohort!r} has no reward frame from this round")
        p = self.params
        leaves = self.tree.leaves()
        deltas, rows = [], []
        for c, u in zip(client_ids, np.asarray(updates), strict=True):
            row = compress(u, p.grad_fraction, p.feature_dtype)
            delta = frame.score(row, p)
            self._feedback(int(c), cohort, delta, NO_LABEL, leaves)
            deltas.append(delta)
            rows.append(row)
        if self.recorder is not None:
            ids = tuple(int(c) for c in client_ids)
            late = np.array(rows, dtype=np.float64).reshape(len(ids), -1)
            self.recorder.record(t, LateRewards(cohort, ids, rows_of(late), tuple(deltas)))
        return tuple(deltas)

    # ------------------------------------------- where records live (server table here)
    def _claims(self, cohort: str, ids: Sequence[int]) -> list[Claim]:
        """Each participant's L and R for `cohort` (its record's entry there): clustering's
        claimed labels, and a known member is one with R > 0 (`rewards.is_known`)."""
        out = []
        for c in ids:
            entry = self.record(c).get(cohort)
            if entry is None:
                out.append(Claim(c, None, None))
            else:
                label = None if entry.label is None else int(entry.label)
                out.append(Claim(c, label, float(entry.reward)))
        return out

    def _feedback(
        self, client_id: int, cohort: str, delta: float | None, label: int, leaves: list[str]
    ) -> None:
        """Deliver dR and the new L; the record reacts as the client would (spec 3.10)."""
        apply_feedback(
            self.record(client_id),
            cohort,
            delta,
            label if label != NO_LABEL else None,
            leaves,
            self.params,
        )

    def _inherit(self, parent: str, children: tuple[str, ...]) -> None:
        """Reward inheritance at the moment of a split, for every record."""
        for record in self.records.values():
            inherit(record, parent, children, self.params)

    def _members(self, cohort: str) -> int:
        leaves = self.tree.leaves()
        return sum(best_leaf(r, leaves) == cohort for r in self.records.values())

    def split(self, cohort: str, round_local: int, *, t: float = 0.0) -> SplitRecord:
        """Partition `cohort` now, whatever the criteria say (experiments that force the
        partition time, spec E5); the same bookkeeping as a decided split."""
        if not self.tree.can_split(cohort, self.params.k):
            raise ValueError(f"cannot split {cohort!r} into {self.params.k} under the leaf cap")
        return self._split(cohort, round_local, t)

    def _assignment(self, parent: str, children: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
        return split_members(self.records, parent, children)

    def _split(self, cohort: str, round_local: int, t: float = 0.0) -> SplitRecord:
        rec = self.tree.split(cohort, self.params.k, round_local)
        if self.recorder is not None:
            members = self._assignment(cohort, rec.children)
            self.recorder.record(t, Split(cohort, rec.children, round_local, members))
        for child in rec.children:
            self.monitors[child] = PartitionMonitor(self.params.k, round_local)
            self.initialised[child] = False
        if self.split_frames is not None:
            self.split_frames.split(cohort, {c: self.tree.weights(c) for c in rec.children})
        self._inherit(cohort, rec.children)
        self.probe_frames.pop(cohort, None)
        return rec

    def _maybe_merge(self, cohort: str, t: float = 0.0) -> None:
        """Optional merge [R]: with M > 2, drop a leaf with < N*fraction members for > n rounds."""
        p = self.params
        if not p.merge or p.n_clients is None or self.tree.m <= 2:
            return
        members = self._members(cohort)
        small = (
            self._small_rounds.get(cohort, 0) + 1 if members < p.n_clients * p.merge_fraction else 0
        )
        self._small_rounds[cohort] = small
        if small > p.merge_rounds:
            try:
                self.tree.remove(cohort)
            except ValueError:
                return
            if self.recorder is not None:
                self.recorder.record(t, Merge(cohort))
