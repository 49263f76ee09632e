"""The Venn store's schema version: fresh files at the current version, older files migrated in
one transaction with their rows kept, newer or foreign files refused with a clear error."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import kairos.venn.service.schema as store_module
from kairos.sim import EventLoop, SimClock
from kairos.venn.service.core import VennService
from kairos.venn.service.store import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    V0_COLUMNS,
    JobRow,
    RoundRow,
    Store,
    StoreSchemaError,
)

# The layout the store wrote before it had a version, verbatim (executescript, WAL, no
# user_version): such files exist and must keep working. Kept here, not imported, so a change
# of the current schema cannot silently change what "a version 0 file" means in this test.
V0_SCHEMA = """
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

REQ = {"min_cpu_ghz": 0.0, "min_ram_gb": 4.0, "min_fp16_mem_mb": 0.0, "min_android_os": 0.0}
OLD_JOBS = [
    JobRow("job-a", "alpha", REQ, 5, 3, 60.0, 0.8, 100.0, 1, None),
    JobRow("job-b", "béta", {**REQ, "min_ram_gb": 0.0}, 2, 1, 30.0, 0.5, 101.5, 1, 140.25),
]
OLD_ROUNDS = [
    RoundRow("job-a", 0, 5, 4, 100.0, 5, 4, 120.0),
    RoundRow("job-a", 1, 5, 4, 121.0, 3, 1, None),  # open: 3 dispatched, 1 answered
    RoundRow("job-b", 0, 2, 1, 102.0, 1, 1, 140.25),
]
NEW_JOB = JobRow("job-c", "gamma", REQ, 1, 1, 10.0, 1.0, 200.0, 0, None)  # as add_job stores it
OLD_ASSIGNMENTS = [
    ("job-a", 1, "dev-1", 122.0, 1.5, 130.0),
    ("job-a", 1, "dev-2", 122.5, 0.7, None),
    ("job-a", 1, "dev-3", 123.0, 2.0, None),
]


def write_v0_file(path: Path) -> None:
    """A store file as the unversioned code left it, written with plain sqlite3."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(V0_SCHEMA)
    for j in OLD_JOBS:
        db.execute(
            "INSERT INTO jobs (job_id, name, requirement, demand, rounds, deadline_s, "
            "min_resp_frac, created, rounds_done, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                j.job_id,
                j.name,
                json.dumps(j.requirement),
                j.demand,
                j.rounds,
                j.deadline_s,
                j.min_resp_frac,
                j.created,
                j.rounds_done,
                j.finished,
            ),
        )
    for r in OLD_ROUNDS:
        db.execute(
            "INSERT INTO rounds VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.job_id,
                r.round_idx,
                r.demand,
                r.needed,
                r.opened,
                r.dispatched,
                r.responses,
                r.closed,
            ),
        )
    db.executemany("INSERT INTO assignments VALUES (?, ?, ?, ?, ?, ?)", OLD_ASSIGNMENTS)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    db.close()


def pragmas(path: Path) -> tuple[int, int]:
    """(user_version, application_id) read with plain sqlite3."""
    db = sqlite3.connect(path)
    try:
        return (
            db.execute("PRAGMA user_version").fetchone()[0],
            db.execute("PRAGMA application_id").fetchone()[0],
        )
    finally:
        db.close()


def test_a_fresh_file_is_created_at_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    s = Store(path)
    assert s.version == SCHEMA_VERSION >= 1
    s.add_job(NEW_JOB)
    s.close()
    assert pragmas(path) == (SCHEMA_VERSION, APPLICATION_ID)
    again = Store(path)  # reopening a current file changes nothing and keeps the rows
    assert again.version == SCHEMA_VERSION and again.jobs() == [NEW_JOB]
    again.close()
    mem = Store(":memory:")
    assert mem.version == SCHEMA_VERSION
    mem.close()


def test_a_version_0_file_keeps_its_rows_and_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    write_v0_file(path)
    s = Store(path)
    assert s.version == SCHEMA_VERSION
    assert pragmas(path) == (SCHEMA_VERSION, APPLICATION_ID)
    assert s.jobs() == OLD_JOBS
    assert s.jobs(active_only=True) == [OLD_JOBS[0]]
    assert s.open_round("job-a") == OLD_ROUNDS[1] and s.open_round("job-b") is None
    for job_id, rnd, dev, assigned, cap, responded in OLD_ASSIGNMENTS:
        assert s.assignment(job_id, rnd, dev) == {
            "job_id": job_id,
            "round_idx": rnd,
            "device_id": dev,
            "assigned": assigned,
            "capability": cap,
            "responded": responded,
        }
    # the migrated file takes new writes, after the old rows (AUTOINCREMENT order kept)
    s.add_job(NEW_JOB)
    s.assign("job-a", 1, "dev-4", 201.0, 1.0)
    assert [j.job_id for j in s.jobs()] == ["job-a", "job-b", "job-c"]
    assert s.open_round("job-a") == RoundRow("job-a", 1, 5, 4, 121.0, 4, 1, None)
    s.close()
    # a service on the migrated file rebuilds the open round: 1 of 5 devices still wanted
    svc = VennService(Store(path), clock=SimClock(EventLoop(start=300.0)))
    assert svc.manager.open_requests() == 1
    assert [r.remaining for r in svc.manager.view(300.0).requests] == [1]
    described = svc.describe(svc.job("job-a"))
    assert described["state"] == "running" and described["round"]["dispatched"] == 4
    svc.store.close()


def test_migration_is_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.sqlite"
    write_v0_file(path)

    def broken(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA application_id = 7")
        db.execute("DELETE FROM assignments")
        raise RuntimeError("step failed half-way")

    monkeypatch.setitem(store_module.MIGRATIONS, 0, broken)
    with pytest.raises(RuntimeError, match="half-way"):
        Store(path)
    assert pragmas(path) == (0, 0)  # rolled back: still a version 0 file, rows and all
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM assignments").fetchone()[0] == len(OLD_ASSIGNMENTS)
    db.close()
    monkeypatch.undo()
    s = Store(path)
    assert s.version == SCHEMA_VERSION and s.jobs() == OLD_JOBS
    s.close()


def test_older_versions_migrate_step_by_step_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a (test-only) version 3, a version 0 file runs steps 0->1, 1->2, 2->3 in order,
    each seeing the version the previous one left."""
    seen: list[tuple[int, int]] = []

    def step(v: int) -> store_module.Migration:
        real = store_module.MIGRATIONS.get(v)

        def run(db: sqlite3.Connection) -> None:
            seen.append((v, db.execute("PRAGMA user_version").fetchone()[0]))
            if real is not None:
                real(db)
            if v == 1:
                db.execute("ALTER TABLE jobs ADD COLUMN note TEXT")

        return run

    monkeypatch.setattr(store_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(store_module, "MIGRATIONS", {v: step(v) for v in range(3)})
    path = tmp_path / "old.sqlite"
    write_v0_file(path)
    s = Store(path)
    assert seen == [(0, 0), (1, 1), (2, 2)]
    assert s.version == 3
    cols = [r[1] for r in s.db.execute("PRAGMA table_info(jobs)")]
    assert cols[-1] == "note"
    assert s.db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == len(OLD_JOBS)
    s.close()
    seen.clear()
    Store(path).close()  # at the current version: no step runs again
    assert seen == []


def test_a_file_from_a_newer_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    s = Store(path)
    s.add_job(OLD_JOBS[0])
    s.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    s.close()
    before = path.read_bytes()
    with pytest.raises(StoreSchemaError) as err:
        Store(path)
    msg = str(err.value)
    assert str(path) in msg
    assert f"schema version {SCHEMA_VERSION + 1}" in msg
    assert f"0 to {SCHEMA_VERSION}" in msg and "newer kairos" in msg
    assert path.read_bytes() == before
    assert pragmas(path) == (SCHEMA_VERSION + 1, APPLICATION_ID)


def test_a_garbage_file_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.sqlite"
    junk = bytes(range(256)) * 16
    path.write_bytes(junk)
    with pytest.raises(StoreSchemaError, match="not a kairos Venn store") as err:
        Store(path)
    assert str(path) in str(err.value)
    assert path.read_bytes() == junk  # nothing written to a file that is not ours


def test_other_sqlite_databases_are_refused(tmp_path: Path) -> None:
    cases = {
        # someone else's tables
        "notes.sqlite": ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"],
        # a table of ours by name, but not by columns
        "lookalike.sqlite": [
            "CREATE TABLE jobs (job_id TEXT)",
            "CREATE TABLE rounds (job_id TEXT)",
            "CREATE TABLE assignments (job_id TEXT)",
        ],
        # another application's mark
        "marked.sqlite": ["CREATE TABLE t (x)", "PRAGMA application_id = 12345"],
        # a version without the kairos mark
        "versioned.sqlite": ["CREATE TABLE t (x)", "PRAGMA user_version = 1"],
    }
    for name, statements in cases.items():
        path = tmp_path / name
        db = sqlite3.connect(path, isolation_level=None)
        for stmt in statements:
            db.execute(stmt)
        db.close()
        before = path.read_bytes()
        with pytest.raises(StoreSchemaError, match="not a kairos Venn store") as err:
            Store(path)
        assert str(path) in str(err.value), name
        assert path.read_bytes() == before, name


def test_version_0_is_recognised_by_exactly_these_tables() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(V0_SCHEMA)
    assert store_module.tables(db) == V0_COLUMNS
    db.close()
