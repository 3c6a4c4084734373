"""Evaluation: metrics (and, in time, dataset loaders and the resumable runner)."""
