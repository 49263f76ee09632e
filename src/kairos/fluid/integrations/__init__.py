"""Fluid inside the stacks users already run: an Optuna ask/tell driver and a Ray Tune
resource-allocation function (both need the `tune` extra)."""
