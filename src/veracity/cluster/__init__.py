"""Checking many claims on a Ray cluster: `veracity eval ... --ray [ADDRESS]`, `veracity check-batch ... --ray`.

Nothing here is imported without `--ray`, so Ray stays an optional dependency (pip install 'veracity[ray]').
The evaluation runner (eval/runner.py) keeps deciding what to check, summing the budget and writing
items.jsonl; this package is one implementation of its dispatch seam (eval/dispatch.py):

    connect.py    ray.init: the cluster at ADDRESS, the one started on this machine, or a new local one
    sizing.py     how many actors and what each gets: CPUs and model threads (embedded), concurrency (servers)
    shipping.py   the run's index folder reaches every node through Ray's object store (a node that already
                  has the same folder at the same path reads it there)
    cache.py      one response-cache actor on the driver's machine: every worker reads and writes the same
                  SQLite file as a run without Ray
    actors.py     the worker actor (one backend each) and the pool that starts them
    dispatch.py   RayDispatch: items to the least-loaded live actor; an item whose actor died is sent again
    local.py      a throwaway local cluster (head + extra node processes) for tests and benchmarks
"""
