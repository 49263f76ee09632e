"""The Salus chapter's figures and tables as named experiments (`kairos salus experiment NAME`).

Importing this package registers them: table2_1 (E1, Table 2.1 / Fig. 2.7), fig2_8a (E2, the
SRTF snapshot), fig2_9 (E3, fair shares), and the model demonstrations fig2_10 (E4,
hyperparameter exploration) and fig2_11 (E5, inference consolidation).
"""

from kairos.salus.experiments import demos, e1, on_service, snapshots

__all__ = ["demos", "e1", "on_service", "snapshots"]
