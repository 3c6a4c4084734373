"""Where the server keeps its runs: an SQLite file (the embedded default) or a PostgreSQL database shared by several
workers. `url` says which a `--db` names, `connection` talks to either, `migrations` keeps the schema current,
`embedded` starts a local PostgreSQL without root, `status` says what a database holds; `veracity db` is
veracity.cli.db."""
