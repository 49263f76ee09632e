"""Which store a `--store` (or `--db`) value names: a `postgresql://` (or `postgres://`) URL is
a PostgreSQL database (`pg_store`, needs the `venn-postgres` extra), anything else a SQLite
file (`store`, the embedded default)."""

from __future__ import annotations

from pathlib import Path

from kairos.venn.service.store_api import VennStore

PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(spec: str | Path) -> bool:
    return str(spec).startswith(PG_SCHEMES)


def open_store(spec: str | Path) -> VennStore:
    """The store `spec` names, opened and at the current schema version."""
    if is_postgres(spec):
        try:
            from kairos.venn.service.pg_store import PostgresStore
        except ImportError as exc:
            raise RuntimeError(
                f"--store {spec!s}: PostgreSQL needs psycopg 3 and psycopg-pool "
                "(pip install 'kairos[venn-postgres]')"
            ) from exc
        return PostgresStore(str(spec))
    from kairos.venn.service.store import Store

    return Store(spec)
