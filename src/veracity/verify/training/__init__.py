"""The evidence verifier's training workshop (`veracity verifier train`, `calibrate`, `average`, `compare`): what
builds, fits, measures and writes the weights in ../weights. Nothing a check runs imports it, and this file
imports nothing, so that `import veracity.verify` never pulls in training.

- `sources.py`, `synthetic.py`, `data.py`: the training mix, the calibration part and the held-apart sets, from
  ../shared/training (never the benchmarks); `long_pairs.py`: long training pairs fitted to windows.
- `settings.py` (`TrainSettings`), `draw.py` (what a training reads), `loop.py` (the fine-tuning),
  `checkpoint.py` (resuming, `--init-from`), `train.py` (`run`: the whole of `veracity verifier train`).
- `fits.py` (the temperature, the stacker, the two-label rules, the uncertain threshold, the lexical baseline),
  `metrics.py` (the held-apart figures), `calibration.py` (`calibrate`), `card.py` (MODEL_CARD.md).
- `average.py` (a model soup of trained folders), `compare.py` (two folders' held-apart figures side by side).
"""
