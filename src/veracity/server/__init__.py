"""The web page and HTTP API (`veracity serve`): start checks, watch their steps live, keep the runs.

app.py (create_app), api.py (the /api routers: api_checks.py, api_reports.py, api_events.py for SSE; api_schemas.py, api_routing.py), pages.py (HTML), runs.py (the executor), store.py
(SQLite), catalog.py (what can be chosen), limits.py, auth.py, reports.py (downloads), views.py
(what the pages show of a trace), answers.py and texts.py (answer check and text check as server pipelines),
rechecks.py (a recheck read from and stored in the run store). The command `veracity serve` is veracity.cli.serve.
"""
