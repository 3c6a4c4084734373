"""Self-training from fact-checks (LEAF): sample answers, score them, build SFT and SimPO sets, train.

sample    split.py + sampling.py   seeded held-apart split; K answers per question, LEAF-scored
build     building.py              sft.jsonl (answers scoring 1.0) and pairs.jsonl (best vs worst)
train     training.py              TRL SFT or SimPO (CPO trainer) on the embedded SmolLM2 GGUF
evaluate  evaluation.py            before/after accuracy on the held-apart questions (run_eval)
"""
