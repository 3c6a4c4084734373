"""Claim extraction from any text: atomic, self-contained claims, each with the character spans it came from.

A shared part (below the systems): `veracity check-text` checks the claims with any claim pipeline, and LEAF
can check an answer claim by claim (`leaf.units = "claims"`), so both agree on what a claim is.

    extract_claims(text, method=...)   extract.py: the claims (rules, or the model with the rules as fallback)
    read_source(ref)                   sources.py: a file (.txt/.md/.html/.pdf), "-" or a URL as text
    sentence_spans(text)               sentences.py: the sentence splitter LEAF uses too, with spans
"""

from .extract import METHODS, extract_claims, resolve_method
from .sentences import Segment, sentence_spans, split_sentences
from .types import AMBIGUOUS, CHECKABLE, MODEL, NOT_CHECKABLE, RULES, ExtractedClaim, Extraction

__all__ = [
    "AMBIGUOUS",
    "CHECKABLE",
    "METHODS",
    "MODEL",
    "NOT_CHECKABLE",
    "RULES",
    "ExtractedClaim",
    "Extraction",
    "Segment",
    "extract_claims",
    "resolve_method",
    "sentence_spans",
    "split_sentences",
]
