"""Error types. A `UserError` is the user's to fix: the CLI prints it as one line, no traceback."""


class VeracityError(Exception):
    """Base class for every error veracity raises on purpose."""


class UserError(VeracityError):
    """Bad input or configuration: empty claim, missing index, unknown model, bad flag value."""


class ConfigError(UserError):
    """The configuration file, an environment variable or a flag holds an invalid value."""


class IndexError_(UserError):
    """A missing, incomplete or corrupt index on disk."""


class BackendError(VeracityError):
    """A model backend failed: server unreachable, HTTP error after retries, model file unusable."""


class BackendUnavailable(BackendError, UserError):
    """The backend cannot be reached or loaded at all (wrong URL, missing file, missing key)."""


class DatabaseUnavailable(UserError):
    """The run database (PostgreSQL) cannot be reached: down, restarting, or the network between. The HTTP API
    answers 503 `database_unavailable` with this message (the database's address, never its password)."""


class SearchError(BackendError):
    """A search request failed (unreachable provider, HTTP error, quota, bad key, bad response): a backend of the
    check's, but not its model, and said as such."""


def is_search_error(e: BaseException) -> bool:
    """A search provider's failure, not the model's."""
    return isinstance(e, SearchError)
