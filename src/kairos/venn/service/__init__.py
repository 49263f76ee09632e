"""`kairos venn serve`: the Venn resource manager as an HTTP service, plus a device emulator.

`store_api` (what a store is), `store` + `sqlite_guarded` + `schema` (the SQLite file),
`pg_store` + `pg_schema` (PostgreSQL), `stores` (which one a `--store` names), `core` (the
single-process service: the driver kept with the store), `shared` (a stateless front-end on a
shared database), `offers`, `app` (FastAPI), `metrics`, `emulator` (asyncio devices and a job
driver), `cli` (the commands).
"""
