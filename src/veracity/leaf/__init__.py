"""LEAF: fact-checking a model's answers, and using the score.

- `factcheck.AnswerChecker`: split an answer into sentences, write a search query per sentence with
  the question as context, retrieve, rate Supported / Not Supported; LEAF score = supported / total.
- `pipelines`: multiple-choice answering (`answer:plain`, `answer:rag`, `answer:fc-rag`,
  `answer:rank-N`), registered in the pipeline registry.
LEAF's figures from stored evaluation results (filtered accuracy, AUC of the score, best/worst of N) are
`veracity.eval.leaf_figures`; the commands (`veracity leaf score | answer | report`) are `veracity.cli.leaf`.
"""

from . import steps as steps  # registers the step types of this system
from .factcheck import NOT_SUPPORTED, SUPPORTED, AnswerChecker, LeafResult, SentenceCheck
from .options import extract_letter, format_options, load_options_file, parse_options
from .sentences import split_sentences

__all__ = [
    "AnswerChecker",
    "LeafResult",
    "NOT_SUPPORTED",
    "SUPPORTED",
    "SentenceCheck",
    "extract_letter",
    "format_options",
    "load_options_file",
    "parse_options",
    "split_sentences",
]
