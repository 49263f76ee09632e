"""`python -m kairos` runs the `kairos` command."""

from kairos.cli import app

app()
