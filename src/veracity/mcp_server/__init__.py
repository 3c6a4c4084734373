"""`veracity mcp`: veracity's checks as tools of a Model Context Protocol server (the official SDK), for agents.

    server.py     the MCP server, its tools' descriptions and schemas, and the HTTP guard (host, token)
    tools.py      what each tool does: a stored run started as the web server starts it, followed step by step
    schemas.py    the tools' typed results (their output schemas)

The `veracity mcp` command (stdio or streamable HTTP, the same options as `veracity serve`) is veracity.cli.mcp.
"""
