"""Evidence anyone can re-check: `recheck` reads a stored run's sources again (what changed, does the verdict
hold), with `stored` (the run and its evidence items), `sources` (each source read again), `decision` (the decision
taken again) and `result` (the outcome and exit status); `steps` declares a recheck's steps. The record itself is
`veracity.types.Evidence`; its provenance helpers (content hash, time, finding a quote again, a short diff) are
`veracity.quotes`; a recheck's place in the run store is `veracity.server.rechecks`, and `veracity recheck` is
`veracity.cli.recheck`.
"""
