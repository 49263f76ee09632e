"""The real Salus runtime: one process that owns the device and runs many PyTorch jobs'
iterations under the Salus policies (needs the `engine` extra; the server the `serve` extra).

`zoo` holds the built-in jobs, `job` loads a factory by import path, `memory` and `profiler`
account each job's bytes, `session` runs one job's iterations with its checks, `device` is the
CPU (virtual memory) or a CUDA GPU, `suspend` is the suspend/resume baseline. Import submodules
directly.
"""
