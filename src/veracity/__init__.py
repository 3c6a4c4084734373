"""veracity: evidence-grounded, explainable fact-checking with language models."""

__version__ = "0.1.0"
