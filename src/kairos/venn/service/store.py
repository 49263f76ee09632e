"""The service's durable state in SQLite (stdlib `sqlite3`): jobs, rounds, assignments.

Every state change is one transaction, so a restarted service finds every registered job, its
open round and that round's progress (who was dispatched, who responded) exactly as the last
answered request left them. Check-ins and offers are not stored: they change nothing durable.

The file carries its schema version (`PRAGMA user_version`) and a kairos mark
(`PRAGMA application_id`). A new file is created at `SCHEMA_VERSION`; a file at an older
version is migrated step by step (`MIGRATIONS`), all steps in one transaction, so a failed
migration leaves the file as it was. Version 0 is the layout written before the store had a
version (no `user_version`): it is recognised by its tables and columns. A file from a newer
kairos, or one that is not a kairos Venn store, is refused with `StoreSchemaError`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
APPLICATION_ID = 0x4B564E31  # "KVN1": marks a kairos Venn store (PRAGMA application_id)

# The tables as version 0 wrote them (and as the current version still has them).
TABLES = """
CREATE TABLE jobs (
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
CREATE TABLE rounds (
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
CREATE TABLE assignments (
    job_id TEXT NOT NULL,
    round_idx INTEGER NOT NULL,
    device_id TEXT NOT NULL,
    assigned REAL NOT NULL,
    capability REAL NOT NULL,
    responded REAL,
    PRIMARY KEY (job_id, round_idx, device_id)
);
"""

# Version 0's columns per table, in order: how an unversioned file is recognised as ours.
V0_COLUMNS: dict[str, tuple[str, ...]] = {
    "jobs": (
        "seq",
        "job_id",
        "name",
        "requirement",
        "demand",
        "rounds",
        "deadline_s",
        "min_resp_frac",
        "created",
        "rounds_done",
        "finished",
    ),
    "rounds": (
        "job_id",
        "round_idx",
        "demand",
        "needed",
        "opened",
        "dispatched",
        "responses",
        "closed",
    ),
    "assignments": ("job_id", "round_idx", "device_id", "assigned", "capability", "responded"),
}


class StoreSchemaError(RuntimeError):
    """The file cannot be used as this version's store (newer, foreign or damaged)."""


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _tables(db: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """User tables and their columns (SQLite's own `sqlite_*` tables left out)."""
    names = [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
            "ESCAPE '\\'"
        )
    ]
    cols = "SELECT name FROM pragma_table_info(?) ORDER BY cid"
    return {n: tuple(r[0] for r in db.execute(cols, (n,))) for n in names}


def _migrate_v0_to_v1(db: sqlite3.Connection) -> None:
    """Version 1 adds the version itself and the kairos mark; the tables stay as they are."""
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


Migration = Callable[[sqlite3.Connection], None]

# MIGRATIONS[v] turns a version-v file into a version-(v+1) file, inside the caller's
# transaction (no COMMIT, no executescript). The caller sets user_version after each step.
MIGRATIONS: dict[int, Migration] = {0: _migrate_v0_to_v1}


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
    """One SQLite file (":memory:" for tests that need no restart).

    Raises `StoreSchemaError` (naming the file and the versions) for a file it cannot use."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # The app touches the store only from its event loop, but uvicorn may build the app
        # in another thread than the one that serves it.
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        try:
            self._check()  # before anything is written to a file that may not be ours
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            with self.tx() as db:
                self._upgrade(db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if isinstance(exc, sqlite3.OperationalError):  # locked, unreadable, ...: as is
                raise
            raise StoreSchemaError(
                f"{self.path}: not a kairos Venn store (SQLite cannot read it: {exc})"
            ) from exc
        except BaseException:
            self.db.close()
            raise

    @property
    def version(self) -> int:
        """The file's schema version (`PRAGMA user_version`)."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def _check(self, db: sqlite3.Connection | None = None) -> int:
        """The file's version if this code can open it; StoreSchemaError otherwise."""
        db = db or self.db
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
        if version == 0 and app_id == 0:
            tables = _tables(db)
            if tables and tables != V0_COLUMNS:
                raise StoreSchemaError(
                    f"{self.path}: not a kairos Venn store (schema version 0 without the "
                    f"kairos tables: found tables {sorted(tables)}, expected "
                    f"{sorted(V0_COLUMNS)} with their columns)"
                )
            return version
        if app_id != APPLICATION_ID:
            raise StoreSchemaError(
                f"{self.path}: not a kairos Venn store (application_id {app_id:#x}, "
                f"user_version {version}; kairos writes application_id {APPLICATION_ID:#x})"
            )
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.path}: written by a newer kairos (Venn store schema version {version}); "
                f"this kairos reads schema versions 0 to {SCHEMA_VERSION}. Upgrade kairos or "
                "use another --db file."
            )
        if version < 1:
            raise StoreSchemaError(
                f"{self.path}: not a kairos Venn store (kairos mark with schema version "
                f"{version}; versions run from 1 to {SCHEMA_VERSION})"
            )
        return version

    def _upgrade(self, db: sqlite3.Connection) -> None:
        """Create a fresh file at SCHEMA_VERSION, or migrate an older one step by step."""
        version = self._check(db)  # again: another process may have got here first
        if version == SCHEMA_VERSION:
            return
        if version == 0 and not _tables(db):
            for stmt in _statements(TABLES):
                db.execute(stmt)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            return
        for v in range(version, SCHEMA_VERSION):
            MIGRATIONS[v](db)
            db.execute(f"PRAGMA user_version = {v + 1}")

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
