"""Prompt templates live as files in `templates/`; `spec.py` holds the prompt spec (template, slots, request,
parser) and the one call every pipeline makes with it; the shared label and rationale parsers are in
`parsers.py`. Each system declares its specs in its `prompts.py` and its own parsers in its package
(`qacheck/parsing.py`, `defame/parsing.py`, `leaf/parsing.py`)."""

from .template import PromptTemplate, load_prompt

__all__ = ["PromptTemplate", "load_prompt"]
