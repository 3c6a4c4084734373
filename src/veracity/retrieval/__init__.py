"""Retrieval: load a corpus, chunk it into passages, index it (BM25, dense, hybrid) and search it.

    from veracity.retrieval import Index
    index = Index.build("corpus/", "my-index", dense=True)
    for evidence in Index.load("my-index").search("who painted the Mona Lisa?", k=5):
        print(evidence.score, evidence.source, evidence.text)
"""

from veracity.retrieval.base import Hit, Ranker, Retriever
from veracity.retrieval.bm25 import BM25Ranker
from veracity.retrieval.dense import DEFAULT_MODEL, DenseRanker, Encoder
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.hybrid import HybridRanker, reciprocal_rank_fusion
from veracity.retrieval.index import MODES, Index, ModeRetriever

__all__ = [
    "BM25Ranker",
    "DEFAULT_MODEL",
    "DenseRanker",
    "Document",
    "Encoder",
    "Hit",
    "HybridRanker",
    "Index",
    "MODES",
    "ModeRetriever",
    "Passage",
    "Ranker",
    "Retriever",
    "chunk_document",
    "load_documents",
    "reciprocal_rank_fusion",
]
