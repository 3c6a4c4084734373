"""Pipelines by name (base.py: the protocol, the run context, the registry): QACheck and its ablations,
the direct and chain-of-thought baselines; DEFAME and LEAF register theirs from their own packages."""
