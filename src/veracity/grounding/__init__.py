"""Grounding: which sentences of an answer do the documents it was given support?

The check LLM-application developers need every day (a RAG app or an agent gives a model documents, the model
answers), in two lines:

    from veracity.grounding import ground
    result = ground(answer, documents)     # documents: texts, or {"id", "text", "title", "url"} each

`result.sentences` has every sentence of the answer (none dropped): supported / not_supported / contradicted, the
calibrated probability that it is grounded, whether that verdict is decided or uncertain, and the exact part of a
document that decided it (document id, character offsets, text); `result.grounded_share` is the supported share of
the decided sentences (None, "not determined", when none is decided). No model is called: the trained verifier reads
every part of every document (verify/grounding.py). The proxy's `--evidence request` runs the same check against the
documents in a chat request (documents.py says which parts of it are read).
"""

from .check import Grounding, SentenceGrounding, ground
from .documents import Document, as_documents

__all__ = ["Document", "Grounding", "SentenceGrounding", "as_documents", "ground"]
