"""`kairos venn serve`: the Venn resource manager as an HTTP service, plus a device emulator.

`store` (SQLite state), `core` (the manager kept in step with the store, job offers), `app`
(FastAPI), `emulator` (asyncio devices and a job driver), `cli` (the commands).
"""
