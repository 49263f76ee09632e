"""The Venn store in PostgreSQL (psycopg 3 and psycopg-pool; the `venn-postgres` extra): the
same tables, versions and contract as the SQLite file (`store.Store`), for several stateless
front-ends on one database (`kairos venn serve --store postgresql://...`).

Connections come from a small pool in autocommit mode: a read or a guarded write (one call of a
server-side function, `pg_schema`) is one statement, so one round trip and one transaction. A
connection broken by a database restart is dropped by the pool when it is returned, and the
next request gets a fresh one: the front-end answers that one request with an error (the
device retries) and reconnects, losing nothing the database had committed.

`trips` counts round trips per operation (BEGIN and COMMIT included where a write needs an
explicit transaction).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import Connection, OperationalError
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from kairos.venn.service.pg_schema import pg_upgrade, pg_version
from kairos.venn.service.schema import StoreSchemaError
from kairos.venn.service.store_api import (
    Assign,
    JobRow,
    OpenJob,
    Respond,
    RoundRow,
    StoreUnavailable,
    empty_attempt,
    finite,
    key_reused,
    retries,
    verdict,
)

ROUND_COLS = ("round_idx", "demand", "needed", "opened", "dispatched", "responses", "closed")
JOB_INSERT = (
    "INSERT INTO jobs (job_id, name, requirement, demand, rounds, deadline_s, min_resp_frac, "
    "created) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
CLOSE_ROUND = "UPDATE rounds SET closed = %s WHERE job_id = %s AND round_idx = %s"
COUNT_ROUND = "UPDATE jobs SET rounds_done = rounds_done + 1, finished = %s WHERE job_id = %s"


class PostgresStore:
    """A PostgreSQL database (a libpq URL). Raises `StoreSchemaError` for a database it
    cannot use, naming it (without its password) and the versions."""

    def __init__(self, url: str, max_connections: int = 4) -> None:
        self.url = url
        self.where = _redacted(url)
        self.trips: Counter[str] = Counter()
        kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row}
        self.pool: ConnectionPool[Connection[dict[str, Any]]] = ConnectionPool(
            url, min_size=1, max_size=max_connections, kwargs=kwargs, open=False
        )
        self.pool.open(wait=True, timeout=30.0)
        try:
            with self._tx("migrate") as conn:
                pg_upgrade(conn, self.where)
        except BaseException:
            self.pool.close()
            raise

    @property
    def version(self) -> int:
        with self._conn() as conn:
            return pg_version(conn, self.where)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _conn(self) -> Iterator[Connection[dict[str, Any]]]:
        """A pooled connection; a lost database becomes `StoreUnavailable` (the pool drops
        the broken connection and opens a fresh one for the next request)."""
        try:
            with self.pool.connection(timeout=10.0) as conn:
                yield conn
        except (OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"{self.where}: the database is unavailable ({exc})") from exc

    @contextmanager
    def _tx(self, op: str) -> Iterator[Connection[dict[str, Any]]]:
        """One explicit transaction (BEGIN and COMMIT are a round trip each)."""
        with self._conn() as conn, conn.transaction():
            self.trips[op] += 2
            yield conn

    def _one(self, op: str, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any] | None:
        self.trips[op] += 1
        with self._conn() as conn:
            return conn.execute(sql, args).fetchone()

    def _all(self, op: str, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        self.trips[op] += 1
        with self._conn() as conn:
            return conn.execute(sql, args).fetchall()

    # -- reads ---------------------------------------------------------------------------
    def jobs(self, active_only: bool = False) -> list[JobRow]:
        where = " WHERE finished IS NULL" if active_only else ""
        return [_job(r) for r in self._all("read", f"SELECT * FROM jobs{where} ORDER BY seq")]

    def job(self, job_id: str) -> JobRow | None:
        row = self._one("read", "SELECT * FROM jobs WHERE job_id = %s", (job_id,))
        return _job(row) if row is not None else None

    def open_round(self, job_id: str) -> RoundRow | None:
        row = self._one(
            "read", "SELECT * FROM rounds WHERE job_id = %s AND closed IS NULL", (job_id,)
        )
        return RoundRow(**row) if row is not None else None

    def assignment(self, job_id: str, round_idx: int, device_id: str) -> dict[str, Any] | None:
        return self._one(
            "read",
            "SELECT * FROM assignments WHERE job_id = %s AND round_idx = %s AND device_id = %s",
            (job_id, round_idx, device_id),
        )

    def snapshot(self) -> list[OpenJob]:
        """Every unfinished job with its open round, in registration order: one round trip."""
        rows = self._all(
            "snapshot",
            "SELECT j.*, r.round_idx, r.demand AS r_demand, r.needed, r.opened, r.dispatched, "
            "r.responses, r.closed AS r_closed FROM jobs j LEFT JOIN rounds r ON "
            "r.job_id = j.job_id AND r.closed IS NULL WHERE j.finished IS NULL ORDER BY j.seq",
        )
        out = []
        for row in rows:
            rnd = None
            if row["round_idx"] is not None:
                rnd = RoundRow(row["job_id"], row["round_idx"], row["r_demand"],
                               row["needed"], row["opened"], row["dispatched"],
                               row["responses"], None)  # fmt: skip
            job = {k: v for k, v in row.items() if k in JobRow.__dataclass_fields__ or k == "seq"}
            out.append(OpenJob(_job(job), rnd))
        return out

    # -- registration --------------------------------------------------------------------
    def registration(self, key: str) -> tuple[str, str] | None:
        row = self._one(
            "read", "SELECT fingerprint, job_id FROM idempotency WHERE key = %s", (key,)
        )
        return (str(row["fingerprint"]), str(row["job_id"])) if row is not None else None

    def add_job(self, job: JobRow, key: str | None = None, fingerprint: str = "") -> None:
        self.register(job, key, fingerprint)

    def register(self, job: JobRow, key: str | None, fingerprint: str) -> tuple[JobRow, bool]:
        """The key's row is written first (ON CONFLICT DO NOTHING): a concurrent registration
        under the same key at another front-end waits for this one, then finds its job."""
        finite(job)
        with self._tx("register") as conn:
            if key is not None:
                self.trips["register"] += 1
                made = conn.execute(
                    "INSERT INTO idempotency (key, fingerprint, job_id, created) VALUES "
                    "(%s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                    (key, fingerprint, job.job_id, job.created),
                )
                if made.rowcount == 0:
                    self.trips["register"] += 1
                    seen = conn.execute(
                        "SELECT i.fingerprint, j.* FROM idempotency i JOIN jobs j ON "
                        "j.job_id = i.job_id WHERE i.key = %s",
                        (key,),
                    ).fetchone()
                    assert seen is not None
                    if seen.pop("fingerprint") != fingerprint:
                        raise key_reused(key)
                    return _job(seen), True
            self.trips["register"] += 1
            conn.execute(JOB_INSERT, _job_args(job))
        return job, False

    # -- the single-process service's writes ---------------------------------------------
    def open(self, rnd: RoundRow) -> None:
        self._one(
            "open",
            "INSERT INTO rounds (job_id, round_idx, demand, needed, opened) VALUES "
            "(%s, %s, %s, %s, %s) RETURNING 1",
            (rnd.job_id, rnd.round_idx, rnd.demand, rnd.needed, rnd.opened),
        )

    def assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> None:
        with self._tx("assign") as conn:
            conn.execute(
                "INSERT INTO assignments (job_id, round_idx, device_id, assigned, capability) "
                "VALUES (%s, %s, %s, %s, %s)",
                (job_id, round_idx, device_id, now, capability),
            )
            conn.execute(
                "UPDATE rounds SET dispatched = dispatched + 1 WHERE job_id = %s "
                "AND round_idx = %s",
                (job_id, round_idx),
            )

    def respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> None:
        with self._tx("respond") as conn:
            conn.execute(
                "UPDATE assignments SET responded = %s WHERE job_id = %s AND round_idx = %s "
                "AND device_id = %s",
                (now, job_id, round_idx, device_id),
            )
            conn.execute(
                "UPDATE rounds SET responses = responses + 1 WHERE job_id = %s AND round_idx = %s",
                (job_id, round_idx),
            )

    def close_round(self, job_id: str, round_idx: int, now: float, finish: bool) -> None:
        with self._tx("close") as conn:
            conn.execute(CLOSE_ROUND, (now, job_id, round_idx))
            conn.execute(COUNT_ROUND, (now if finish else None, job_id))

    def reopen(self, job_id: str, round_idx: int, opened: float) -> None:
        self._one(
            "reopen",
            "UPDATE rounds SET opened = %s, dispatched = 0, responses = 0 WHERE job_id = %s "
            "AND round_idx = %s RETURNING 1",
            (opened, job_id, round_idx),
        )

    # -- the front-ends' guarded writes: one round trip each -----------------------------
    def try_open(self, rnd: RoundRow) -> bool:
        """The round's primary key makes a concurrent second open of it a no-op."""
        row = self._one(
            "open",
            "INSERT INTO rounds (job_id, round_idx, demand, needed, opened) SELECT %s, %s, %s, "
            "%s, %s WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = %s AND finished IS NULL "
            "AND rounds_done = %s) AND NOT EXISTS (SELECT 1 FROM rounds WHERE job_id = %s AND "
            "closed IS NULL) ON CONFLICT DO NOTHING RETURNING 1",
            (rnd.job_id, rnd.round_idx, rnd.demand, rnd.needed, rnd.opened, rnd.job_id,
             rnd.round_idx, rnd.job_id),
        )  # fmt: skip
        return row is not None

    def try_assign(
        self, job_id: str, round_idx: int, device_id: str, now: float, capability: float
    ) -> Assign:
        row = self._one(
            "assign",
            "SELECT venn_assign(%s, %s, %s, %s, %s) AS got",
            (job_id, round_idx, device_id, now, capability),
        )
        assert row is not None
        return Assign(row["got"])

    def try_respond(self, job_id: str, round_idx: int, device_id: str, now: float) -> Respond:
        row = self._one(
            "respond",
            "SELECT venn_respond(%s, %s, %s, %s) AS got",
            (job_id, round_idx, device_id, now),
        )
        assert row is not None
        return Respond(row["got"])

    def judge_deadlines(self, now: float, resubmit_s: float) -> list[tuple[RoundRow, bool]]:
        """Judge every attempt past its deadline (and its retries that passed theirs,
        `retries`); rows another front-end is judging (or writing) are skipped (SKIP LOCKED),
        so each attempt is judged once."""
        judged: list[tuple[RoundRow, bool]] = []
        with self._tx("deadlines") as conn:
            self.trips["deadlines"] += 1
            rows = conn.execute(
                "SELECT r.*, j.name, j.requirement, j.demand AS j_demand, j.rounds, "
                "j.deadline_s, j.min_resp_frac, j.created, j.rounds_done, j.finished FROM "
                "rounds r JOIN jobs j ON j.job_id = r.job_id WHERE r.closed IS NULL AND "
                "r.opened + j.deadline_s <= %s FOR UPDATE OF r SKIP LOCKED",
                (now,),
            ).fetchall()
            for row in rows:
                rnd = RoundRow(row["job_id"], *(row[c] for c in ROUND_COLS))
                job = JobRow(row["job_id"], row["name"], json.loads(row["requirement"]),
                             row["j_demand"], row["rounds"], row["deadline_s"],
                             row["min_resp_frac"], row["created"], row["rounds_done"],
                             row["finished"])  # fmt: skip
                ok = verdict(job, rnd)
                due = rnd.opened + job.deadline_s
                self.trips["deadlines"] += 2 if ok else 1
                if ok:
                    last = rnd.round_idx + 1 >= job.rounds
                    conn.execute(CLOSE_ROUND, (due, rnd.job_id, rnd.round_idx))
                    conn.execute(COUNT_ROUND, (due if last else None, rnd.job_id))
                else:
                    again = retries(due, job.deadline_s, resubmit_s, now)
                    conn.execute(
                        "UPDATE rounds SET opened = %s, dispatched = 0, responses = 0 "
                        "WHERE job_id = %s AND round_idx = %s",
                        (again[-1], rnd.job_id, rnd.round_idx),
                    )
                    judged.append((rnd, ok))
                    judged += [(empty_attempt(rnd, at), False) for at in again[:-1]]
                    continue
                judged.append((rnd, ok))
        return judged


def _job(row: dict[str, Any]) -> JobRow:
    d = dict(row)
    d.pop("seq", None)
    d["requirement"] = json.loads(d["requirement"])
    return JobRow(**d)


def _job_args(job: JobRow) -> tuple[Any, ...]:
    return (job.job_id, job.name, json.dumps(job.requirement), job.demand, job.rounds,
            job.deadline_s, job.min_resp_frac, job.created)  # fmt: skip


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    head, at, tail = url.rpartition("@")
    if not at or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, cred = head.partition("//")
    return f"{scheme}//{cred.split(':', 1)[0]}:***@{tail}"


__all__ = ["PostgresStore", "StoreSchemaError"]
