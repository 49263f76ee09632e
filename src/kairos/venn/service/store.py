"""The service's durable state in SQLite (stdlib `sqlite3`): jobs, rounds, assignments.

Every state change is one transaction, so a restarted service finds every registered job, its
open round and that round's progress (who was dispatched, who responded) exactly as the last
answered request left them. Check-ins and offers are not stored: they change nothing durable.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT UNIQUE NOT NULL,
    name TEXT NOT NULL,
    requirement TEXT NOT NULL,
    demand INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    deadline_s REAL NOT NULL,
    min_resp_frac REAL NOT NULL,
    created REAL NOT NULL,
    rounds_done INTEGER NOT NULL DEFAULT 0,
    finished REAL
);
CREATE TABLE IF NOT EXISTS rounds (
    job_id TEXT NOT NULL,
    round_idx INTEGER NOT NULL,
    demand INTEGER NOT NULL,
    needed INTEGER NOT NULL,
    opened REAL NOT NULL,
    dispatched INTEGER NOT NULL DEFAULT 0,
    responses INTEGER NOT NULL DEFAULT 0,
    closed REAL,
    PRIMARY KEY (job_id, round_idx)
);
CREATE TABLE IF NOT EXISTS assignments (
    job_id TEXT NOT NULL,
    round_idx INTEGER NOT NULL,
    device_id TEXT NOT NULL,
    assigned REAL NOT NULL,
    capability REAL NOT NULL,
    responded REAL,
    PRIMARY KEY (job_id, round_idx, device_id)
);
"""


@dataclass
class JobRow:
    job_id: str
    name: str
    requirement: dict[str, float]
    demand: int
    rounds: int
    deadline_s: float
    min_resp_frac: float
    created: float
    rounds_done: int
    finished: float | None


@dataclass
class RoundRow:
    job_id: str
    round_idx: int
    demand: int
    needed: int
    opened: float
    dispatched: int
    responses: int
    closed: float | None


class Store:
    """One SQLite file (":memory:" for tests that need no restart)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # The app touches the store only from its event loop, but uvicorn may build the app
        # in another thread than the one that serves it.
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        if self.path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on any error."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- reads ---------------------------------------------------------------------------
    def jobs(self, active_only: bool = False) -> list[JobRow]:
        where = " WHERE finished IS NULL" if active_only else ""
        rows = self.db.execute(f"SELECT * FROM jobs{where} ORDER BY seq").fetchall()
        return [_job(r) for r in rows]

    def job(self, job_id: str) -> JobRow | None:
        row = self.db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return _job(row) if row is not None else None

    def open_round(self, job_id: str) -> RoundRow | None:
        row = self.db.execute(
            "SELECT * FROM rounds WHERE job_id = ? AND closed IS NULL", (job_id,)
        ).fetchone()
        return RoundRow(**dict(row)) if row is not None else None

    def assignment(self, job_id: str, round_idx: int, device_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT * FROM assignments WHERE job_id = ? AND round_idx = ? AND device_id = ?",
            (job_id, round_idx, device_id),
        ).fetchone()
        return dict(row) if row is not None else None

    # -- writes (each one transaction) ---------------------------------------------------
    def add_job(self, job: JobRow) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO jobs (job_id, name, requirement, demand, rounds, deadline_s, "
                "min_resp_frac, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.job_id,
                    job.name,
                    json.dumps(job.requirement),
                    job.demand,
                    job.rounds,
                    job.deadline_s,
                    job.min_resp_frac,
                    job.created,
                ),
            )

    def open(self, rnd: RoundRow) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO rounds (job_id, round_idx, demand, needed, opened) "
                "VALUES (?, ?, ?, ?, ?)",
                (rnd.job_id, rnd.round_idx, rnd.demand, rnd.needed, rnd.opened),
            )

    def assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO assignments (job_id, round_idx, device_id, assigned, capability) "
                "VALUES (?, ?, ?, ?, ?)",
                (job_id, round_idx, device_id, now, capability),
            )
            db.execute(
                "UPDATE rounds SET dispatched = dispatched + 1 WHERE job_id = ? AND round_idx = ?",
                (job_id, round_idx),
            )

    def respond(
        self, job_id: str, round_idx: int, device_id: str, now: float, close: bool, finish: bool
    ) -> None:
        """Record one response; optionally close the round and finish the job, atomically."""
        with self.tx() as db:
            db.execute(
                "UPDATE assignments SET responded = ? WHERE job_id = ? AND round_idx = ? "
                "AND device_id = ?",
                (now, job_id, round_idx, device_id),
            )
            db.execute(
                "UPDATE rounds SET responses = responses + 1 WHERE job_id = ? AND round_idx = ?",
                (job_id, round_idx),
            )
            if close:
                db.execute(
                    "UPDATE rounds SET closed = ? WHERE job_id = ? AND round_idx = ?",
                    (now, job_id, round_idx),
                )
                db.execute(
                    "UPDATE jobs SET rounds_done = rounds_done + 1, finished = ? WHERE job_id = ?",
                    (now if finish else None, job_id),
                )

    def redispatch(self, job_id: str, round_idx: int, now: float) -> None:
        """A round passed its deadline short of responses: restart its clock and count only
        the devices that answered as dispatched, so the missing ones are asked for again."""
        with self.tx() as db:
            db.execute(
                "UPDATE rounds SET opened = ?, dispatched = responses "
                "WHERE job_id = ? AND round_idx = ?",
                (now, job_id, round_idx),
            )


def _job(row: sqlite3.Row) -> JobRow:
    d = dict(row)
    d.pop("seq")
    d["requirement"] = json.loads(d["requirement"])
    return JobRow(**d)
