"""`veracity proxy`: an OpenAI-compatible server in front of a model server that fact-checks every answer.

    upstream.py   the model server answers come from (raw JSON and server-sent events, its key never echoed)
    evidence.py   what answers are checked against: an index, a web search backend, or nothing (said so)
    checking.py   one answer's check as a stored run (the web server's answer check), and its `veracity` object
    policies.py   annotate, flag, fc-rag (Fact-Check-Then-RAG), chosen per proxy or per request
    app.py        the HTTP routes: /v1/chat/completions (streamed or not), /v1/models

The `veracity proxy` command is veracity.cli.proxy.
"""
