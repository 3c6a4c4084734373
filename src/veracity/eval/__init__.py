"""Evaluation: the benchmarks' loaders (`datasets/`, a module per family), the resumable runner (`runner.py`, items
dispatched to threads or Ray by `dispatch.py`), the report with intervals and confusion matrices (`report.py`),
AVeriTeC's own scores (`averitec.py`, `meteor.py`) and LEAF's figures from stored results (`leaf_figures.py`). The
metrics themselves are veracity.metrics."""
