"""PostgreSQL-only properties of the store: its tables are the SQLite file's, it refuses a
database that is not its own or is newer, and its guarded assignment holds when front-ends
race on one round (and a copy of it without the row lock is caught over-assigning)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from kairos.venn.service.pg_schema import MARK, PG_MIGRATIONS, PG_SCHEMA_VERSION
from kairos.venn.service.pg_store import PostgresStore
from kairos.venn.service.schema import StoreSchemaError, tables
from kairos.venn.service.store import Store
from kairos.venn.service.store_api import Assign, JobRow, RoundRow
from tests.venn.service.invariants import clean, violations


def test_same_tables_and_columns_as_the_sqlite_file(pg_url: str, tmp_path: Path) -> None:
    Store(tmp_path / "v.sqlite").close()
    with closing(sqlite3.connect(tmp_path / "v.sqlite")) as db:
        lite = tables(db)
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE "
            "table_schema = 'public' AND table_name != 'venn_schema' ORDER BY table_name, "
            "ordinal_position"
        ).fetchall()
    pg: dict[str, tuple[str, ...]] = {}
    for table, column in rows:
        pg[table] = (*pg.get(table, ()), column)
    assert pg == lite


def test_migrates_once_and_refuses_foreign_and_newer_databases(
    pg_url: str, postgres: object
) -> None:
    s = PostgresStore(pg_url)
    assert s.version == PG_SCHEMA_VERSION
    s.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE venn_schema SET version = %s", (PG_SCHEMA_VERSION + 1,))
    with pytest.raises(StoreSchemaError, match="newer kairos"):
        PostgresStore(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE venn_schema")
    with pytest.raises(StoreSchemaError, match="not a kairos Venn store"):
        PostgresStore(pg_url)


def test_a_version_2_database_is_upgraded_to_stamp_responses_in_lock_order(
    pg_url: str,
) -> None:
    """A database a kairos of store version 2 made (its responses stamped by each front-end's
    own clock) is upgraded in place: afterwards a closing response whose front-end's clock ran
    behind is stamped at the round's latest response."""
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:  # one transaction, committed
        for v in (0, 1):
            PG_MIGRATIONS[v](conn)
        conn.execute("INSERT INTO venn_schema (mark, version) VALUES (%s, 2)", (MARK,))
    s = PostgresStore(pg_url)
    assert s.version == PG_SCHEMA_VERSION == 3
    job = JobRow("j", "r", {}, 2, 1, 60.0, 1.0, 0.0, 0, None)
    s.register(job, None, "")
    assert s.try_open(RoundRow("j", 0, 2, 2, 0.0, 0, 0, None))
    for d in ("d0", "d1"):
        s.try_assign("j", 0, d, 1.0, 1.0)
    s.try_respond("j", 0, "d0", 5.0)
    s.try_respond("j", 0, "d1", 4.0)  # its front-end read the clock first, locked second
    with psycopg.connect(pg_url) as conn:
        assert violations(conn) == clean()
    done = s.job("j")
    assert done is not None and done.finished == 5.0
    s.close()


def test_front_ends_starting_together_migrate_once(pg_url: str) -> None:
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            stores.append(PostgresStore(pg_url))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and [s.version for s in stores] == [PG_SCHEMA_VERSION] * 4
    for s in stores:
        s.close()


# The guarded assignment without its row lock, and slowed between check and write so that
# racing callers all pass the check: what the lock prevents.
UNLOCKED_ASSIGN = """
CREATE OR REPLACE FUNCTION venn_assign(p_job TEXT, p_round INTEGER, p_device TEXT,
                                       p_now DOUBLE PRECISION, p_cap DOUBLE PRECISION)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE r RECORD;
BEGIN
    SELECT opened, dispatched, demand, closed INTO r FROM rounds
        WHERE job_id = p_job AND round_idx = p_round;
    IF r.dispatched >= r.demand THEN RETURN 'full'; END IF;
    PERFORM pg_sleep(0.2);
    INSERT INTO assignments (job_id, round_idx, device_id, assigned, capability)
        VALUES (p_job, p_round, p_device, p_now, p_cap) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN 'serving'; END IF;
    UPDATE rounds SET dispatched = dispatched + 1 WHERE job_id = p_job AND round_idx = p_round;
    RETURN 'assigned';
END $$
"""


def _race(pg_url: str, prepare: Callable[[], None] = lambda: None) -> tuple[list[Assign], dict]:
    """Three front-ends' stores, 12 devices at once for a round of demand 4 (two of them the
    same device twice): what each got, and the invariants read back."""
    fronts = [PostgresStore(pg_url) for _ in range(3)]
    prepare()
    job = JobRow("j", "r", {}, 4, 1, 60.0, 0.8, 0.0, 0, None)
    fronts[0].register(job, None, "")
    assert fronts[0].try_open(RoundRow("j", 0, 4, 4, 0.0, 0, 0, None))
    devices = [f"d{i}" for i in range(10)] + ["d0", "d1"]
    got: list[Assign] = []
    gate = threading.Barrier(len(devices))

    def go(i: int, device: str) -> None:
        gate.wait()
        got.append(fronts[i % 3].try_assign("j", 0, device, 1.0, 1.0))

    threads = [threading.Thread(target=go, args=(i, d)) for i, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in fronts:
        f.close()
    with psycopg.connect(pg_url) as conn:
        return got, violations(conn)


def test_racing_front_ends_never_over_assign_a_round(pg_url: str) -> None:
    got, found = _race(pg_url)
    assert got.count(Assign.ASSIGNED) == 4
    assert found == clean()


def test_the_race_check_catches_an_assignment_without_the_row_lock(
    postgres: object, pg_url: str
) -> None:
    def unlock() -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(UNLOCKED_ASSIGN)

    got, found = _race(pg_url, unlock)
    assert got.count(Assign.ASSIGNED) > 4
    assert found["round_past_demand"] == 1
