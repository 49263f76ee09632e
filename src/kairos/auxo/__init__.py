"""Auxo: cohort identification for federated learning (spec specs/auxo.md).

The pure algorithms, one concept a module; each works on update vectors, client ids and cohort
ids only, never on client data:

- `params`: every knob, with the spec's defaults (`AuxoParams`, `AuxoParams.reference()`);
- `features`: compression and normalisation of updates into clustering features;
- `clustering`: CLIENTCLUSTERING, labels kept per client and centroids recomputed per round;
- `criteria`: heterogeneity estimate, Lemma 1's bound and the partition decision;
- `tree`: the cohort tree, budget-keeping splits, tree distance;
- `rewards`: affinity records, exploitation and exploration rewards, inheritance at a split;
- `selection`: decaying epsilon-greedy cohort selection;
- `matching`: the coordinator's MATCH, which always returns a leaf;
- `assignment`: probing leaves to place a new client at deployment;
- `policy`: the pieces composed for one cohort-round in centralized mode: the decision core;
- `decisions`: its decisions as plain records (a decision log), `replay` feeds a log back.

The package also holds its `cli.SYSTEM`, so `kairos auxo` exists.
"""

from kairos.auxo.params import AuxoParams
from kairos.auxo.policy import AuxoPolicy, RoundReport

__all__ = ["AuxoParams", "AuxoPolicy", "RoundReport"]
