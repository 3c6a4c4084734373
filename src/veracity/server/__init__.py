"""The web page and HTTP API (`veracity serve`): start checks, watch their steps live, keep the runs.

app.py (create_app), api.py (/api routes, SSE), pages.py (HTML), runs.py (the executor), store.py
(SQLite), catalog.py (what can be chosen), limits.py, auth.py, reports.py (downloads), views.py
(what the pages show of a trace), answers.py and texts.py (answer check and text check as server pipelines),
commands.py (`veracity serve`).
"""
