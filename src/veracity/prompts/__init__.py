"""Prompt templates live as files in `templates/`; the shared label and rationale parsers in `parsers.py`,
each system's own parsers in its package (`qacheck/parsing.py`, `defame/parsing.py`, `leaf/parsing.py`)."""

from .template import PromptTemplate, load_prompt

__all__ = ["PromptTemplate", "load_prompt"]
