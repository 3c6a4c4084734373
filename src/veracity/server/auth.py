"""Who may use the server.

On a loopback address (127.0.0.0/8, localhost, ::1) only this machine can connect, and no token is
needed unless one is set. Anywhere else the server refuses to start without a bearer token in the
environment variable VERACITY_API_TOKEN; every API request must then carry
`Authorization: Bearer TOKEN`, and the pages ask for the token once and keep a cookie derived from it.

Without a token the server only answers requests whose Host header names a loopback address, so a
web page elsewhere cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable, Mapping

from ..errors import UserError
from .errors import ApiError

TOKEN_ENV = "VERACITY_API_TOKEN"
MIN_TOKEN_CHARS = 16
COOKIE = "veracity_session"
LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    h = host.strip().strip("[]").lower()
    if h in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


_HOST_HEADER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")


def host_of(header: str) -> str:
    """The host part of a Host header ('[::1]:8000' -> '::1', 'localhost:80' -> 'localhost'); "" for a header
    that is not `host[:port]` at all ('127.0.0.1:80@evil.example', '[::1', 'a b'), which no rule then allows."""
    m = _HOST_HEADER.fullmatch(header.strip())
    if m is None:
        return ""
    return m.group("v6") or m.group("name")


def _origin_parts(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an Origin header ('http://127.0.0.1:8765' -> ('http', '127.0.0.1', 8765)); None for
    one that is no http(s) origin ('null', 'file://', a path, a user part, a bad port)."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(origin.strip())
        port = u.port
    except ValueError:
        return None
    if (
        u.scheme not in ("http", "https")
        or not u.hostname
        or u.username is not None
        or u.password is not None
        or u.path not in ("", "/")
        or u.query
        or u.fragment
    ):
        return None
    return u.scheme, u.hostname.lower(), port or (443 if u.scheme == "https" else 80)


def normal_origin(origin: str) -> str | None:
    """An origin as `--allow-origin` takes it, written one way ('HTTP://Example.org:80/' -> 'http://example.org:80');
    None for one that is no http(s) origin."""
    parts = _origin_parts(origin)
    if parts is None:
        return None
    scheme, host, port = parts
    return f"{scheme}://{'[' + host + ']' if ':' in host else host}:{port}"


def origin_allowed(origin: str | None, host_header: str, allowed: Iterable[str] = (), *, null_ok: bool = False) -> bool:
    """Whether a request with this Origin header may be served (DNS rebinding, pages of other sites): no Origin
    (not a browser: curl, an SDK) is allowed; an Origin naming this server's own host and port (the Host header it
    was sent to, or a loopback form of it when that is a loopback address: localhost, 127.0.0.1, [::1]) is allowed;
    one the user allowed (`allowed`, as `normal_origin` writes them) is allowed; any other is not, 'null' included
    unless `null_ok` (the page's own forms send 'null' under its no-referrer policy)."""
    if origin is None or not origin.strip():
        return True
    if origin.strip() == "null":
        return null_ok
    parts = _origin_parts(origin)
    if parts is None:
        return False
    if normal_origin(origin) in set(allowed):
        return True
    scheme, o_host, o_port = parts
    m = _HOST_HEADER.fullmatch(host_header.strip())
    if m is None:
        return False
    host = (m.group("v6") or m.group("name")).lower()
    port = int(m.group("port")) if m.group("port") else (443 if scheme == "https" else 80)
    return o_port == port and (o_host == host or (is_loopback(o_host) and is_loopback(host)))


class Auth:
    def __init__(self, token: str | None) -> None:
        self.token = token or None
        self._session = (
            hmac.new(self.token.encode(), b"veracity-session", hashlib.sha256).hexdigest() if self.token else None
        )

    @classmethod
    def for_host(cls, host: str, env: Mapping[str, str]) -> Auth:
        """The token rule: required whenever `host` is not a loopback address."""
        token = (env.get(TOKEN_ENV) or "").strip() or None
        if token is None and not is_loopback(host):
            raise UserError(
                f"listening on {host or 'all interfaces'} lets other machines reach the server: set "
                f"{TOKEN_ENV} to a secret first (e.g. `export {TOKEN_ENV}=$(python -c "
                "'import secrets; print(secrets.token_urlsafe(32))')`), or listen on 127.0.0.1"
            )
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            raise UserError(
                f"{TOKEN_ENV} has {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
        return cls(token)

    @property
    def required(self) -> bool:
        return self.token is not None

    @property
    def session_value(self) -> str | None:
        return self._session

    def token_matches(self, given: str) -> bool:
        return self.token is not None and secrets.compare_digest(given.encode(), self.token.encode())

    def allowed(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        if not self.required:
            return True
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_matches(value.strip()):
            return True
        cookie = cookies.get(COOKIE, "")
        return bool(cookie) and secrets.compare_digest(cookie.encode(), self._session.encode())

    def check_api(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> None:
        if not self.allowed(headers, cookies):
            given = "authorization" in headers
            raise ApiError(
                401,
                "unauthorized",
                "the bearer token is wrong"
                if given
                else f"this server needs a bearer token: send the header 'Authorization: Bearer TOKEN' "
                f"with the value of {TOKEN_ENV} the server was started with",
                headers={"WWW-Authenticate": 'Bearer realm="veracity"'},
            )

    def host_allowed(self, host_header: str) -> bool:
        """Without a token, only loopback Host headers are answered (DNS rebinding)."""
        return self.required or is_loopback(host_of(host_header))
