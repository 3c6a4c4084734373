"""Retrieval: load a corpus, chunk it into passages, index it (BM25, dense, hybrid) and search it.

from veracity.retrieval import Index
index = Index.build("corpus/", "my-index", dense=True)
for evidence in Index.load("my-index").search("who painted the Mona Lisa?", k=5):
    print(evidence.score, evidence.source, evidence.text)
open_index("my-index")   # any index folder, plain or sharded (a Wikipedia dump's: sharded_build.build_sharded)
"""

from veracity.retrieval.base import Hit, Ranker, Retriever
from veracity.retrieval.bm25 import BM25Ranker
from veracity.retrieval.dense import DEFAULT_MODEL, DenseRanker, Encoder
from veracity.retrieval.documents import Document, Passage, chunk_document, load_documents
from veracity.retrieval.hybrid import HybridRanker, reciprocal_rank_fusion
from veracity.retrieval.index import MODES, Index, ModeRetriever
from veracity.retrieval.sharded import ShardedIndex, open_index
from veracity.retrieval.sharded_build import build_sharded

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
    "ShardedIndex",
    "build_sharded",
    "chunk_document",
    "load_documents",
    "open_index",
    "reciprocal_rank_fusion",
]
