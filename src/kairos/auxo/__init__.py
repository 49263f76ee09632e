"""Auxo, not written yet (issue 16).

The package holds only its `cli.SYSTEM` so far, so `kairos auxo` is there from the start.
"""
