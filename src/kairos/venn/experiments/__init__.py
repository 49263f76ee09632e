"""The Venn chapter's tables and figures as named experiments (`kairos venn experiment NAME`).

Importing this package registers them: toy, ilp, fig4_5, table4_1, table4_2_3, table4_4,
fig4_10, fig4_11, fig4_12, fig4_13, fig4_14.
"""

from kairos.venn.experiments import ablation, micro, scale, tables
from kairos.venn.experiments.point import VennPoint, run_point

__all__ = ["VennPoint", "ablation", "micro", "run_point", "scale", "tables"]
