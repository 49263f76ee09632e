"""The Fluid chapter's figures and tables as named experiments (`kairos fluid experiment NAME`).

Importing this package registers them: fig3_7 (algorithms x workloads), table3_2, fig3_3,
fig3_9, fig3_10, fig3_11, fig3_12, fig3_13a, fig3_13b, theory, and local (real trials).
"""

from kairos.fluid.experiments import local, matrix, sensitivity, theory

__all__ = ["local", "matrix", "sensitivity", "theory"]
