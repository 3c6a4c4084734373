"""DEFAME (Braun et al. 2025): dynamic, tool-using verification of text and image claims.

Six stages, every model call seeing the current fact-check record: plan actions from the tool list,
execute them, summarize each result (or drop it as irrelevant), develop the reasoning, judge (a
"not enough information" verdict goes back to planning, at most `defame.max_iterations` rounds),
and justify the verdict with links and images.
"""

from . import steps as steps  # registers the step types of this system
