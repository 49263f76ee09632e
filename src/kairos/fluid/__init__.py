"""Fluid: a hyperparameter-tuning execution engine (issue 15).

The package holds only its `cli.SYSTEM` so far, so `kairos fluid` is there from the start.
"""
