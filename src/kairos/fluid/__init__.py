"""Fluid: hyperparameter tuning that packs small trials onto shared GPUs and scales large ones
across several, under any tuning algorithm.

The driver (`driver.py`) runs the planners over a clock and a backend; the simulator
(`simulator.py`) runs it on simulated time, the local and Ray backends (`runtime/`) on real
trials. Its decisions are plain records (`decisions.py`). See docs/fluid.md.
"""
