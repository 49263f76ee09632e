"""Salus: many deep-learning jobs sharing one GPU, switched at iteration boundaries.

The driver (`driver.py`) decides over a clock and a worker; the simulator (`simulator.py`) runs
it on simulated time, the execution service (`runtime/`) on the wall clock with real PyTorch
jobs. Its decisions are plain records (`decisions.py`). See docs/salus.md.
"""
