"""Baselines from the QACheck paper's comparison: direct prompting (`direct`) and chain-of-thought (`cot`).

`pipeline.Direct` and `pipeline.ChainOfThought`, registered by name; both decide the label through the
shared `veracity.verdicts`.
"""

from . import steps as steps  # registers the step types of this system
