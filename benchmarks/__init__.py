"""Speed and quality benchmarks: `make bench` (or `python -m benchmarks`).

Each benchmark measures ours and a baseline side by side in one run and reports the ratio,
because absolute timings on a shared machine are noisy.
"""
