"""The Salus chapter's figures and tables as named experiments (`kairos salus experiment NAME`).

Importing this package registers them: table2_1 (E1, Table 2.1 / Fig. 2.7), fig2_8a (E2, the
SRTF snapshot), fig2_9 (E3, fair shares), and the model demonstrations fig2_10 (E4,
hyperparameter exploration) and fig2_11 (E5, inference consolidation); on the real service
service_e1, service_e2, service_e3 and service_e4 (on CPU, or on a GPU with `device=cuda`).
"""

from kairos.salus.experiments import demos, e1, on_service, on_service_e4, snapshots

__all__ = ["demos", "e1", "on_service", "on_service_e4", "snapshots"]
