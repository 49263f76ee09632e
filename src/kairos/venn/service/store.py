"""The service's durable state in SQLite (stdlib `sqlite3`): jobs, rounds, assignments, and the
idempotency keys of job registrations.

Every state change is one transaction, so a restarted service finds every registered job, its
open round and that round's progress (who was dispatched, who responded) exactly as the last
answered request left them. Check-ins and offers are not stored: they change nothing durable.
The file's layout and versions are `schema`'s.

A file is used by one process at a time: the store holds an exclusive lock on it
(`kairos.runtime.file_lock`) for as long as it is open, so a second server on the same file
refuses to start and names the holder instead of over-assigning devices beside the first.

Numbers go in finite or not at all: a job whose numbers include NaN or infinity raises
`NonFiniteError`, naming the field, before anything is written (the API already refuses them;
this is the last line, since one stored infinity would break every later read of the table).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kairos.runtime.file_lock import FileInUseError, FileLock
from kairos.venn.service.schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    V0_COLUMNS,
    Migration,
    StoreSchemaError,
    check,
    upgrade,
)
from kairos.venn.service.sqlite_guarded import GuardedWrites
from kairos.venn.service.sqlite_guarded import job_row as _job
from kairos.venn.service.store_api import (
    JobRow,
    KeyReusedError,
    NonFiniteError,
    OpenJob,
    RoundRow,
    finite,
)

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "V0_COLUMNS",
    "FileInUseError",
    "JobRow",
    "KeyReusedError",
    "Migration",
    "NonFiniteError",
    "OpenJob",
    "RoundRow",
    "Store",
    "StoreSchemaError",
]


class Store(GuardedWrites):
    """One SQLite file (":memory:" for tests that need no restart).

    Raises `StoreSchemaError` (naming the file and the versions) for a file it cannot use."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.lock = None if self.path == ":memory:" else FileLock(self.path, "Venn store")
        # The app touches the store only from its event loop, but uvicorn may build the app
        # in another thread than the one that serves it.
        self.trips: Counter[str] = Counter()  # statements per operation (in-process: cheap)
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        try:
            check(self.db, self.path)  # before anything is written to a file that may not be ours
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            with self.tx() as db:
                upgrade(db, self.path)
        except sqlite3.DatabaseError as exc:
            self.close()
            if isinstance(exc, sqlite3.OperationalError):  # locked, unreadable, ...: as is
                raise
            raise StoreSchemaError(
                f"{self.path}: not a kairos Venn store (SQLite cannot read it: {exc})"
            ) from exc
        except BaseException:
            self.close()
            raise

    @property
    def version(self) -> int:
        """The file's schema version (`PRAGMA user_version`)."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self.db.close()
        if self.lock is not None:
            self.lock.release()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on any error (each counted as
        one trip of `write`; the guarded writes also count their own operation)."""
        self.trips["write"] += 1
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- reads ---------------------------------------------------------------------------
    def jobs(self, active_only: bool = False) -> list[JobRow]:
        self.trips["read"] += 1
        where = " WHERE finished IS NULL" if active_only else ""
        rows = self.db.execute(f"SELECT * FROM jobs{where} ORDER BY seq").fetchall()
        return [_job(r) for r in rows]

    def job(self, job_id: str) -> JobRow | None:
        self.trips["read"] += 1
        row = self.db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return _job(row) if row is not None else None

    def open_round(self, job_id: str) -> RoundRow | None:
        self.trips["read"] += 1
        row = self.db.execute(
            "SELECT * FROM rounds WHERE job_id = ? AND closed IS NULL", (job_id,)
        ).fetchone()
        return RoundRow(**dict(row)) if row is not None else None

    def assignment(self, job_id: str, round_idx: int, device_id: str) -> dict[str, Any] | None:
        self.trips["read"] += 1
        row = self.db.execute(
            "SELECT * FROM assignments WHERE job_id = ? AND round_idx = ? AND device_id = ?",
            (job_id, round_idx, device_id),
        ).fetchone()
        return dict(row) if row is not None else None

    # -- writes (each one transaction) ---------------------------------------------------
    def registration(self, key: str) -> tuple[str, str] | None:
        self.trips["read"] += 1
        """(fingerprint, job_id) of the registration made with idempotency `key`, if any."""
        row = self.db.execute(
            "SELECT fingerprint, job_id FROM idempotency WHERE key = ?", (key,)
        ).fetchone()
        return (str(row[0]), str(row[1])) if row is not None else None

    def add_job(self, job: JobRow, key: str | None = None, fingerprint: str = "") -> None:
        """Store `job`, and with it (in the same transaction) the idempotency `key` it was
        registered under, so a retry after a lost answer finds it."""
        finite(job)
        with self.tx() as db:
            self._insert_job(db, job, key, fingerprint)

    @staticmethod
    def _insert_job(db: sqlite3.Connection, job: JobRow, key: str | None, fingerprint: str) -> None:
        if key is not None:
            db.execute(
                "INSERT INTO idempotency (key, fingerprint, job_id, created) VALUES (?, ?, ?, ?)",
                (key, fingerprint, job.job_id, job.created),
            )
        db.execute(
            "INSERT INTO jobs (job_id, name, requirement, demand, rounds, deadline_s, "
            "min_resp_frac, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (job.job_id, job.name, json.dumps(job.requirement), job.demand, job.rounds,
             job.deadline_s, job.min_resp_frac, job.created),
        )  # fmt: skip

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

    def respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> None:
        """Record one response counted toward the round's open attempt."""
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

    def close_round(self, job_id: str, round_idx: int, now: float, finish: bool) -> None:
        """The round succeeded: close it and count it, finishing the job with its last."""
        with self.tx() as db:
            self._close(db, job_id, round_idx, now, finish)

    @staticmethod
    def _close(
        db: sqlite3.Connection, job_id: str, round_idx: int, now: float, finish: bool
    ) -> None:
        db.execute(
            "UPDATE rounds SET closed = ? WHERE job_id = ? AND round_idx = ?",
            (now, job_id, round_idx),
        )
        db.execute(
            "UPDATE jobs SET rounds_done = rounds_done + 1, finished = ? WHERE job_id = ?",
            (now if finish else None, job_id),
        )

    def reopen(self, job_id: str, round_idx: int, opened: float) -> None:
        """The round aborted at its deadline: its next attempt opens at `opened` with nothing
        dispatched or answered (the last attempt's assignments stay, as history: each was
        made before `opened`)."""
        with self.tx() as db:
            db.execute(
                "UPDATE rounds SET opened = ?, dispatched = 0, responses = 0 "
                "WHERE job_id = ? AND round_idx = ?",
                (opened, job_id, round_idx),
            )
