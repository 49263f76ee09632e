"""The layout of the Venn store's SQLite file, its version, and the steps between versions.

The file carries its schema version (`PRAGMA user_version`) and a kairos mark
(`PRAGMA application_id`). A new file is created as version 0 and taken through every step, so
a fresh file and a migrated one are the same by construction. A file at an older version is
migrated step by step (`MIGRATIONS`), all steps in one transaction, so a failed migration leaves
the file as it was. Version 0 is the layout written before the store had a version (no
`user_version`): it is recognised by its tables and columns. A file from a newer kairos, or one
that is not a kairos Venn store, is refused with `StoreSchemaError`.

Versions: 0 the three tables; 1 the kairos mark; 2 the idempotency keys of job registrations.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 2
APPLICATION_ID = 0x4B564E31  # "KVN1": marks a kairos Venn store (PRAGMA application_id)

# The tables as version 0 wrote them; later versions add to them in `MIGRATIONS`.
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


def statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def tables(db: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
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


def _migrate_v1_to_v2(db: sqlite3.Connection) -> None:
    """Version 2: a job registration's idempotency key, so a retried registration (the same
    key and body) returns the job the first one made instead of making a second."""
    db.execute(
        "CREATE TABLE idempotency (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, "
        "job_id TEXT NOT NULL, created REAL NOT NULL)"
    )


Migration = Callable[[sqlite3.Connection], None]

# MIGRATIONS[v] turns a version-v file into a version-(v+1) file, inside the caller's
# transaction (no COMMIT, no executescript). The caller sets user_version after each step.
MIGRATIONS: dict[int, Migration] = {0: _migrate_v0_to_v1, 1: _migrate_v1_to_v2}


def check(db: sqlite3.Connection, path: str) -> int:
    """The file's version if this code can open it; StoreSchemaError (naming `path`) if not."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
    if version == 0 and app_id == 0:
        found = tables(db)
        if found and found != V0_COLUMNS:
            raise StoreSchemaError(
                f"{path}: not a kairos Venn store (schema version 0 without the "
                f"kairos tables: found tables {sorted(found)}, expected "
                f"{sorted(V0_COLUMNS)} with their columns)"
            )
        return version
    if app_id != APPLICATION_ID:
        raise StoreSchemaError(
            f"{path}: not a kairos Venn store (application_id {app_id:#x}, "
            f"user_version {version}; kairos writes application_id {APPLICATION_ID:#x})"
        )
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{path}: written by a newer kairos (Venn store schema version {version}); "
            f"this kairos reads schema versions 0 to {SCHEMA_VERSION}. Upgrade kairos or "
            "use another --db file."
        )
    if version < 1:
        raise StoreSchemaError(
            f"{path}: not a kairos Venn store (kairos mark with schema version "
            f"{version}; versions run from 1 to {SCHEMA_VERSION})"
        )
    return version


def upgrade(db: sqlite3.Connection, path: str) -> None:
    """Bring the file to SCHEMA_VERSION inside the caller's transaction: a new file gets the
    version 0 tables first; then every step from the file's version runs in order."""
    version = check(db, path)  # again: another process may have got here first
    if version == 0 and not tables(db):
        for stmt in statements(TABLES):
            db.execute(stmt)
    for v in range(version, SCHEMA_VERSION):
        MIGRATIONS[v](db)
        db.execute(f"PRAGMA user_version = {v + 1}")
