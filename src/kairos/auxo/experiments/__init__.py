"""Auxo's named experiments (`kairos auxo experiment NAME [--quick]`).

Importing this package imports every module in it, and each registers its experiments with
`@experiment`: e1 (clustered population), e2 (no-cluster control), e3 (with FedProx,
q-FedAvg, YoGi), e5 (partition time, cohort count), and whatever other modules add here.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
