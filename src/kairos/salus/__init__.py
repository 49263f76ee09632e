"""Salus, not written yet (issue 14).

The package holds only its `cli.SYSTEM` so far, so `kairos salus` is there from the start.
"""
