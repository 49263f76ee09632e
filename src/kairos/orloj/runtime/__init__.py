"""The real Orloj runtime: random-weight PyTorch models served by any `BatchPolicy` (spec 6.2).

`served` (the model interface), `models` / `decoder` (the early-exit, decoder and static
models), `executor` / `process` (the worker: a thread, or a process of its own; `forward` runs
one batch for either), `calibrate` (solo profiles and the g_k fit),
`profiler` (online solo re-runs), `dispatcher` (the policy driven in real time; `results`),
`server` (HTTP API; `report` for stats and metrics), `loadgen` (open-loop trace replay) and
`cli` (`kairos orloj serve | loadgen | calibrate`). Needs the `engine` and `serve` extras;
import the submodules directly.
"""
