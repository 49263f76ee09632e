"""The SQLite store's guarded writes (`store_api`), the ones stateless front-ends rely on: each
is one IMMEDIATE transaction, which SQLite runs one at a time, so its checks and its write are
atomic. `store.Store` mixes them in beside its plain reads and writes."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import AbstractContextManager

from kairos.venn.service.store_api import (
    Assign,
    JobRow,
    OpenJob,
    Respond,
    RoundRow,
    empty_attempt,
    finite,
    key_reused,
    retries,
    verdict,
)


class GuardedWrites:
    """Needs the store's `db`, `trips`, `tx`, `jobs`, `_insert_job` and `_close`."""

    db: sqlite3.Connection
    trips: Counter[str]

    def tx(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def jobs(self, active_only: bool = False) -> list[JobRow]:
        raise NotImplementedError

    @staticmethod
    def _insert_job(db: sqlite3.Connection, job: JobRow, key: str | None, fingerprint: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _close(
        db: sqlite3.Connection, job_id: str, round_idx: int, now: float, finish: bool
    ) -> None:
        raise NotImplementedError

    def snapshot(self) -> list[OpenJob]:
        """Every unfinished job with its open round (if any), in registration order."""
        self.trips["snapshot"] += 1
        jobs = self.jobs(active_only=True)
        rows = self.db.execute("SELECT * FROM rounds WHERE closed IS NULL").fetchall()
        rounds = {r["job_id"]: RoundRow(**dict(r)) for r in rows}
        return [OpenJob(j, rounds.get(j.job_id)) for j in jobs]

    def register(self, job: JobRow, key: str | None, fingerprint: str) -> tuple[JobRow, bool]:
        """Store `job` and return it with False; or, when `key` was used before with the same
        `fingerprint`, the job that registration made, with True (KeyReusedError if the
        fingerprint differs). Check and write are one transaction."""
        finite(job)
        self.trips["register"] += 1
        with self.tx() as db:
            if key is not None:
                seen = db.execute(
                    "SELECT fingerprint, job_id FROM idempotency WHERE key = ?", (key,)
                ).fetchone()
                if seen is not None:
                    if seen[0] != fingerprint:
                        raise key_reused(key)
                    row = db.execute("SELECT * FROM jobs WHERE job_id = ?", (seen[1],))
                    return job_row(row.fetchone()), True
            self._insert_job(db, job, key, fingerprint)
        return job, False

    def try_open(self, rnd: RoundRow) -> bool:
        """Open `rnd` if it is its job's next round and the job has none open; False if not
        (another front-end opened it first, or it is out of order)."""
        self.trips["open"] += 1
        with self.tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO rounds (job_id, round_idx, demand, needed, opened) "
                "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND "
                "finished IS NULL AND rounds_done = ?) AND NOT EXISTS (SELECT 1 FROM rounds "
                "WHERE job_id = ? AND closed IS NULL)",
                (rnd.job_id, rnd.round_idx, rnd.demand, rnd.needed, rnd.opened, rnd.job_id,
                 rnd.round_idx, rnd.job_id),
            )  # fmt: skip
            return cur.rowcount == 1

    def try_assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> Assign:
        self.trips["assign"] += 1
        with self.tx() as db:
            r = db.execute(
                "SELECT r.opened, r.dispatched, r.demand, r.closed, j.deadline_s FROM rounds r "
                "JOIN jobs j ON j.job_id = r.job_id WHERE r.job_id = ? AND r.round_idx = ?",
                (job_id, round_idx),
            ).fetchone()
            if r is None or r["closed"] is not None or not _running(r, now):
                return Assign.CLOSED
            if r["dispatched"] >= r["demand"]:
                return Assign.FULL
            cur = db.execute(
                "INSERT OR IGNORE INTO assignments (job_id, round_idx, device_id, assigned, "
                "capability) VALUES (?, ?, ?, ?, ?)",
                (job_id, round_idx, device_id, now, capability),
            )
            if cur.rowcount == 0:
                return Assign.SERVING
            db.execute(
                "UPDATE rounds SET dispatched = dispatched + 1 WHERE job_id = ? AND round_idx = ?",
                (job_id, round_idx),
            )
            return Assign.ASSIGNED

    def try_respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> Respond:
        self.trips["respond"] += 1
        with self.tx() as db:
            key = (job_id, round_idx)
            a = db.execute(
                "SELECT assigned, responded FROM assignments WHERE job_id = ? AND round_idx = ? "
                "AND device_id = ?",
                (*key, device_id),
            ).fetchone()
            if a is None:
                return Respond.UNKNOWN
            if a["responded"] is not None:
                return Respond.DUPLICATE
            r = db.execute(
                "SELECT r.opened, r.closed, r.responses, r.needed, j.rounds, j.deadline_s "
                "FROM rounds r "
                "JOIN jobs j ON j.job_id = r.job_id WHERE r.job_id = ? AND r.round_idx = ?",
                key,
            ).fetchone()
            if r["closed"] is not None or a["assigned"] < r["opened"] or not _running(r, now):
                return Respond.LATE
            # stamped no earlier than the round's latest response: front-ends read their
            # clocks before queueing on the write lock, not in the order it admits them
            latest = db.execute(
                "SELECT MAX(responded) FROM assignments WHERE job_id = ? AND round_idx = ?", key
            ).fetchone()[0]
            now = now if latest is None else max(now, latest)
            db.execute(
                "UPDATE assignments SET responded = ? WHERE job_id = ? AND round_idx = ? "
                "AND device_id = ?",
                (now, *key, device_id),
            )
            db.execute(
                "UPDATE rounds SET responses = responses + 1 WHERE job_id = ? AND round_idx = ?",
                key,
            )
            if r["responses"] + 1 < r["needed"]:
                return Respond.COUNTED
            last = round_idx + 1 >= r["rounds"]
            self._close(db, job_id, round_idx, now, last)
            return Respond.FINISHED if last else Respond.COMPLETED

    def judge_deadlines(self, now: float, resubmit_s: float) -> list[tuple[RoundRow, bool]]:
        """Apply the deadline verdict to every attempt whose deadline passed by `now`, at its
        due time: a success closes it, an abort reopens it `resubmit_s` after its deadline
        with nothing dispatched (and retries that passed their own deadlines by `now` abort
        empty, `retries`). Returns each judged attempt as it stood, and the verdict."""
        self.trips["deadlines"] += 1
        judged: list[tuple[RoundRow, bool]] = []
        with self.tx() as db:
            rows = db.execute(
                "SELECT r.*, j.deadline_s AS deadline_s FROM rounds r JOIN jobs j ON "
                "j.job_id = r.job_id WHERE r.closed IS NULL AND r.opened + j.deadline_s <= ?",
                (now,),
            ).fetchall()
            for row in rows:
                d = dict(row)
                deadline_s = d.pop("deadline_s")
                rnd = RoundRow(**d)
                job = job_row(db.execute("SELECT * FROM jobs WHERE job_id = ?", (rnd.job_id,))
                           .fetchone())  # fmt: skip
                ok = verdict(job, rnd)
                due = rnd.opened + deadline_s
                if ok:
                    self._close(db, rnd.job_id, rnd.round_idx, due, rnd.round_idx + 1 >= job.rounds)
                judged.append((rnd, ok))
                if not ok:
                    again = retries(due, deadline_s, resubmit_s, now)
                    db.execute(
                        "UPDATE rounds SET opened = ?, dispatched = 0, responses = 0 "
                        "WHERE job_id = ? AND round_idx = ?",
                        (again[-1], rnd.job_id, rnd.round_idx),
                    )
                    judged += [(empty_attempt(rnd, at), False) for at in again[:-1]]
        return judged


def _running(r: sqlite3.Row, now: float) -> bool:
    """Whether the attempt is under way at `now`: opened, and its deadline not yet reached
    (a deadline runs before an input at the same instant, judged or not)."""
    return bool(r["opened"] <= now < r["opened"] + r["deadline_s"])


def job_row(row: sqlite3.Row) -> JobRow:
    d = dict(row)
    d.pop("seq")
    d["requirement"] = json.loads(d["requirement"])
    return JobRow(**d)
