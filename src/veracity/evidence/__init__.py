"""Evidence anyone can re-check: the record's provenance helpers (`quotes`) and `veracity recheck` of a stored run
(`recheck`, `commands`). The record itself is `veracity.types.Evidence`.

This package imports nothing at its top, so that the shared parts (retrieval, web) can use `quotes` without
pulling in the recheck, which sits above them.
"""
