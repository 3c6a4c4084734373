"""Prompt templates live as files in `templates/`; each has a parser next to it in `parsers.py`."""

from .template import PromptTemplate, load_prompt

__all__ = ["PromptTemplate", "load_prompt"]
