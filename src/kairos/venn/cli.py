"""`SYSTEM`: what Venn adds to `kairos` (its `kairos.systems` entry point): the resource-manager
service's commands (`kairos venn serve | devices`) and the experiments."""

from __future__ import annotations

from kairos.systems import System
from kairos.venn.artifact_cli import register as register_artifact
from kairos.venn.service.cli import register

SYSTEM = System(
    name="venn",
    help="A resource manager sharing edge devices among many federated-learning jobs.",
    register=(register, register_artifact),
    experiments="kairos.venn.experiments",
)
