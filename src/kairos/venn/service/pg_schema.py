"""The Venn store's layout in PostgreSQL: the SQLite file's tables and columns (`schema`), a
version table standing for SQLite's `user_version` and `application_id`, and the guarded writes
as server-side functions, so that each is one round trip and one transaction.

The version lives in `venn_schema` (one row: the kairos mark and the version). Steps run as in
the SQLite store: a new database goes from version 0 through every step, so a fresh database
and a migrated one are the same by construction; all steps run in one transaction, under an
advisory lock, so front-ends starting together migrate once and a failed step leaves the
database as it was. A database with the Venn tables but no version row is refused (it is not
ours), as is one from a newer kairos.

An attempt is over at its deadline even before a front-end has judged it: a guarded write at
or after `opened + deadline_s` finds it closed (the driver runs a deadline before any input at
the same instant). The guarded writes lock the round's row (`SELECT ... FOR UPDATE`) before
they check it, so two front-ends touching one round queue on that row for a few microseconds,
and front-ends on different rounds never wait for each other. Every write that changes a job
(`rounds_done`, `finished`) first holds its round's lock: locks are always taken round, then
job, so they cannot deadlock.

Each front-end reads its own clock before its write queues on the round's lock, so two writes
can reach the lock in the other order than their clocks say. A response is therefore stamped
no earlier than the latest response already recorded for its round (version 3): the round
closes no earlier than any response it counted, whichever front-end's clock ran ahead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kairos.venn.service.schema import StoreSchemaError

MARK = "kairos-venn"
LOCK_KEY = 0x4B564E31  # the advisory lock held while migrating (the SQLite application_id)

V1 = """
CREATE TABLE venn_schema (mark TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE jobs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id TEXT UNIQUE NOT NULL,
    name TEXT NOT NULL,
    requirement TEXT NOT NULL,
    demand INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    deadline_s DOUBLE PRECISION NOT NULL,
    min_resp_frac DOUBLE PRECISION NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    rounds_done INTEGER NOT NULL DEFAULT 0,
    finished DOUBLE PRECISION
);
CREATE TABLE rounds (
    job_id TEXT NOT NULL,
    round_idx INTEGER NOT NULL,
    demand INTEGER NOT NULL,
    needed INTEGER NOT NULL,
    opened DOUBLE PRECISION NOT NULL,
    dispatched INTEGER NOT NULL DEFAULT 0,
    responses INTEGER NOT NULL DEFAULT 0,
    closed DOUBLE PRECISION,
    PRIMARY KEY (job_id, round_idx)
);
CREATE TABLE assignments (
    job_id TEXT NOT NULL,
    round_idx INTEGER NOT NULL,
    device_id TEXT NOT NULL,
    assigned DOUBLE PRECISION NOT NULL,
    capability DOUBLE PRECISION NOT NULL,
    responded DOUBLE PRECISION,
    PRIMARY KEY (job_id, round_idx, device_id)
)
"""

V2_ASSIGN = """
CREATE TABLE idempotency (
    key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, job_id TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE FUNCTION venn_assign(p_job TEXT, p_round INTEGER, p_device TEXT,
                            p_now DOUBLE PRECISION, p_cap DOUBLE PRECISION)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE r RECORD;
BEGIN
    SELECT x.opened, x.dispatched, x.demand, x.closed, j.deadline_s INTO r
        FROM rounds x JOIN jobs j ON j.job_id = x.job_id
        WHERE x.job_id = p_job AND x.round_idx = p_round FOR UPDATE OF x;
    IF NOT FOUND OR r.closed IS NOT NULL OR r.opened > p_now
        OR p_now >= r.opened + r.deadline_s THEN RETURN 'closed'; END IF;
    IF r.dispatched >= r.demand THEN RETURN 'full'; END IF;
    INSERT INTO assignments (job_id, round_idx, device_id, assigned, capability)
        VALUES (p_job, p_round, p_device, p_now, p_cap) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN 'serving'; END IF;
    UPDATE rounds SET dispatched = dispatched + 1 WHERE job_id = p_job AND round_idx = p_round;
    RETURN 'assigned';
END $$;
"""

# The guarded response, as version 2 wrote it (stamped by the front-end's clock) and as version
# 3 replaces it (stamped no earlier than its round's latest response).
RESPOND = """
{create} venn_respond(p_job TEXT, p_round INTEGER, p_device TEXT, p_now DOUBLE PRECISION)
RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE r RECORD; a RECORD; last BOOLEAN; stamp DOUBLE PRECISION;
BEGIN
    SELECT x.opened, x.closed, x.responses, x.needed, j.rounds, j.deadline_s INTO r
        FROM rounds x JOIN jobs j ON j.job_id = x.job_id
        WHERE x.job_id = p_job AND x.round_idx = p_round FOR UPDATE OF x;
    SELECT assigned, responded INTO a FROM assignments
        WHERE job_id = p_job AND round_idx = p_round AND device_id = p_device;
    IF NOT FOUND THEN RETURN 'unknown'; END IF;
    IF a.responded IS NOT NULL THEN RETURN 'duplicate'; END IF;
    IF r.closed IS NOT NULL OR a.assigned < r.opened OR p_now >= r.opened + r.deadline_s
        THEN RETURN 'late'; END IF;
    {stamp};
    UPDATE assignments SET responded = stamp
        WHERE job_id = p_job AND round_idx = p_round AND device_id = p_device;
    UPDATE rounds SET responses = responses + 1 WHERE job_id = p_job AND round_idx = p_round;
    IF r.responses + 1 < r.needed THEN RETURN 'counted'; END IF;
    last := p_round + 1 >= r.rounds;
    UPDATE rounds SET closed = stamp WHERE job_id = p_job AND round_idx = p_round;
    UPDATE jobs SET rounds_done = rounds_done + 1,
                    finished = CASE WHEN last THEN stamp END WHERE job_id = p_job;
    RETURN CASE WHEN last THEN 'finished' ELSE 'completed' END;
END $$
"""
V2 = V2_ASSIGN + RESPOND.format(create="CREATE FUNCTION", stamp="stamp := p_now")
V3 = RESPOND.format(
    create="CREATE OR REPLACE FUNCTION",
    stamp="SELECT GREATEST(p_now, MAX(responded)) INTO stamp FROM assignments\n"
    "        WHERE job_id = p_job AND round_idx = p_round",
)

Cursor = Any  # a psycopg connection in a transaction (typed loosely: psycopg is optional)
Step = Callable[[Cursor], None]


def _script(text: str) -> Step:
    def run(conn: Cursor) -> None:
        for stmt in _statements(text):
            conn.execute(stmt)

    return run


def _statements(text: str) -> list[str]:
    """Split on the `;` that end statements, not those inside a `$$` function body."""
    out, buf, inside = [], [], False
    for line in text.splitlines():
        buf.append(line)
        inside ^= line.count("$$") % 2 == 1
        if not inside and line.rstrip().endswith(";"):
            out.append("\n".join(buf).strip().rstrip(";"))
            buf = []
    tail = "\n".join(buf).strip()
    return [*(s for s in out if s), *([tail] if tail else [])]


# PG_MIGRATIONS[v] takes a version-v database to v+1: 1 the tables and the mark, 2 the
# idempotency keys and the guarded writes (the SQLite store's versions 1 and 2), 3 responses
# stamped in the order the round's lock admits them.
PG_MIGRATIONS: dict[int, Step] = {0: _script(V1), 1: _script(V2), 2: _script(V3)}
PG_SCHEMA_VERSION = len(PG_MIGRATIONS)
OUR_TABLES = ("jobs", "rounds", "assignments", "idempotency")


def pg_version(conn: Cursor, where: str) -> int:
    """The database's store version (0: empty of Venn tables); StoreSchemaError if not ours."""
    names = {r["table_name"] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()}  # fmt: skip
    if "venn_schema" not in names:
        ours = sorted(names & set(OUR_TABLES))
        if ours:
            raise StoreSchemaError(
                f"{where}: not a kairos Venn store (tables {ours} but no venn_schema version "
                "row); use another database"
            )
        return 0
    row = conn.execute("SELECT mark, version FROM venn_schema").fetchone()
    if row is None or row["mark"] != MARK:
        raise StoreSchemaError(f"{where}: not a kairos Venn store (venn_schema holds {row})")
    version = int(row["version"])
    if version > PG_SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{where}: written by a newer kairos (Venn store schema version {version}); "
            f"this kairos reads schema versions 1 to {PG_SCHEMA_VERSION}. Upgrade kairos or use "
            "another --store database."
        )
    return version


def pg_upgrade(conn: Cursor, where: str) -> None:
    """Bring the database to PG_SCHEMA_VERSION inside the caller's transaction, one front-end at
    a time (a transaction-scoped advisory lock)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
    version = pg_version(conn, where)
    for v in range(version, PG_SCHEMA_VERSION):
        PG_MIGRATIONS[v](conn)
        if v == 0:
            conn.execute("INSERT INTO venn_schema (mark, version) VALUES (%s, 1)", (MARK,))
        else:
            conn.execute("UPDATE venn_schema SET version = %s", (v + 1,))
