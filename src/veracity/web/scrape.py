"""Reading web pages safely: the main text, title, date and images of a URL.

    page = Scraper().fetch("https://example.org/article")
    page.text, page.title, page.date, page.images

Safety: only http(s) URLs are fetched, and only when every address the host resolves to is public
(no loopback, private, link-local -- e.g. cloud metadata at 169.254.169.254 --, multicast, reserved
or unspecified addresses, nor an IPv6 address that carries such an IPv4 address: IPv4-mapped or
-compatible, 6to4, Teredo, NAT64, ISATAP) unless `allow_private` is set. The connection then goes to the address
that was checked (the host is not resolved a second time, so DNS rebinding cannot swap in a
private one). Redirects are followed by hand (at most 5), each one checked the same way. Bodies
are streamed and cut off at `max_bytes`; every request has a timeout and the whole fetch a
deadline. Failures raise `ScrapeError` with one line.

Page text is returned as found, instructions and all: keeping it apart from the prompt is the
pipeline's job.
"""

from __future__ import annotations

import io
import ipaddress
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx

from .. import __version__
from ..quotes import utc_now
from .filters import to_iso_date

MAX_REDIRECTS = 5
REFUSED = "refused to fetch"
MAX_TEXT_CHARS = 20_000
PAGE_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/pdf")
DEFAULT_USER_AGENT = f"Mozilla/5.0 (compatible; veracity/{__version__}; fact-checking research)"
_REDIRECTS = (301, 302, 303, 307, 308)


class ScrapeError(Exception):
    """A page could not be read: refused address, HTTP error, too large, not a web page, timeout.

    The message reads "could not fetch URL: REASON" (or "refused to fetch URL: REASON");
    `url` and `reason` hold its parts.
    """

    def __init__(self, url: str, reason: str, *, verb: str = "could not fetch") -> None:
        super().__init__(f"{verb} {url}: {reason}")
        self.url, self.reason, self.verb = url, reason, verb


@dataclass
class Page:
    url: str  # the URL asked for
    final_url: str  # where the redirects ended
    title: str
    text: str
    date: str | None = None  # ISO publication date, when the page gives one
    images: list[str] = field(default_factory=list)  # absolute image URLs, main image first
    content_type: str = ""
    truncated: bool = False  # the text was cut to the scraper's max_chars
    fetched_at: str | None = None  # when it was read, ISO-8601 UTC


# --------------------------------------------------------------------------- address check


def _resolve(host: str, port: int) -> list[str]:
    """Every IP address `host` resolves to (an IP literal resolves to itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


_KINDS = ("loopback", "link_local", "unspecified", "multicast", "private", "reserved")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765)


def _parse_ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address, also in the forms inet_aton reads (2130706433, 0x7f.1, 0177.0.0.1); None if none."""
    text = address.strip().strip("[]").split("%", 1)[0]  # drop an IPv6 zone ("fe80::1%eth0")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except (OSError, ValueError, UnicodeError):
        return None


def _rfc6052(n: int, prefix_len: int) -> ipaddress.IPv4Address:
    """The IPv4 address inside an IPv4-embedded IPv6 address with a `prefix_len` NAT64 prefix (RFC 6052 2.2);
    bits 64-71 (the "u" octet) are never part of it."""
    if prefix_len == 96:
        return ipaddress.IPv4Address(n & 0xFFFFFFFF)
    hi_bits = 64 - prefix_len  # IPv4 bits before the u octet
    hi = (n >> (128 - prefix_len - hi_bits)) & ((1 << hi_bits) - 1)
    lo_bits = 32 - hi_bits
    lo = (n >> (56 - lo_bits)) & ((1 << lo_bits) - 1)
    return ipaddress.IPv4Address((hi << lo_bits) | lo)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """Every IPv4 address an IPv6 address carries, with the name of the form: IPv4-mapped, IPv4-translated,
    IPv4-compatible, 6to4, Teredo (server and un-XOR-ed client), NAT64 (64:ff9b::/96 and the local-use
    64:ff9b:1::/48 at each RFC 6052 prefix length) and ISATAP (interface id [02]00:5efe:a.b.c.d)."""
    n = int(ip)
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    if ip in _TRANSLATED:
        found.append(("IPv4-translated", ipaddress.IPv4Address(n & 0xFFFFFFFF)))
    if n >> 32 == 0 and n > 1:
        found.append(("IPv4-compatible", ipaddress.IPv4Address(n)))
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("Teredo", client), ("Teredo", server)]
    if ip in _NAT64:
        found.append(("NAT64", _rfc6052(n, 96)))
    if ip in _NAT64_LOCAL:
        found += [("NAT64", _rfc6052(n, length)) for length in (96, 64, 56, 48)]
    if (n >> 32) & 0xFCFFFFFF == 0x00005EFE:  # ISATAP interface id, u/g bits either way
        found.append(("ISATAP", ipaddress.IPv4Address(n & 0xFFFFFFFF)))
    return found


def _plain_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    for kind in _KINDS:
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:  # fec0::/10, which is_global lets through
        return "site-local"
    return None if ip.is_global else "non-public"


def _address_kind(address: str) -> str | None:
    """Why an IP address may not be fetched ("loopback", "private", "6to4-embedded loopback", ...), or None
    for a public one. An IPv6 address that carries an IPv4 address in any of the embedded forms is judged by
    that IPv4 address too (`embedded_ipv4`)."""
    ip = _parse_ip(address)
    if ip is None:
        return "unreadable"
    if isinstance(ip, ipaddress.IPv6Address):
        for form, inner in embedded_ipv4(ip):
            kind = _plain_kind(inner)
            if kind:
                return kind if form == "IPv4-mapped" else f"{form}-embedded {kind}"
    return _plain_kind(ip)


def check_url(url: str, *, allow_private: bool = False) -> str | None:
    """Raise ScrapeError unless `url` is http(s) and (unless `allow_private`) its host is public.

    Returns the checked IP address to connect to (None with `allow_private`: nothing was resolved).
    """
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise ScrapeError(url, f"not a valid URL ({e})", verb=REFUSED) from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise ScrapeError(url, "only http and https URLs are fetched", verb=REFUSED)
    if allow_private:
        return None
    try:
        addresses = _resolve(host, port or (443 if parts.scheme.lower() == "https" else 80))
    except (socket.gaierror, UnicodeError, OSError) as e:
        raise ScrapeError(url, f"cannot resolve host {host} ({e})") from None
    for address in addresses:
        kind = _address_kind(address)
        if kind:
            literal = address == host.strip("[]") or _parse_ip(address) in (_parse_ip(host), None)
            article = "an" if kind[0].lower() in "aeiou" else "a"
            what = f"{kind} address" if literal else f"{host} resolves to {address}, {article} {kind} address"
            raise ScrapeError(url, f"{what} (allow_private_addresses to allow)", verb=REFUSED)
    return addresses[0]


def _pinned(url: str, address: str | None) -> tuple[httpx.URL, dict[str, str], dict[str, str]]:
    """The request URL, extra headers and extensions that make httpx connect to `address` (when given).

    The Host header and the TLS server name (SNI and certificate check) stay those of the URL's host.
    """
    target = httpx.URL(url)
    if address is None:
        return target, {}, {}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    return target.copy_with(host=address), {"Host": target.netloc.decode("ascii")}, extensions


# --------------------------------------------------------------------------- the scraper


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:g} MB"
    return f"{n / 1000:g} kB" if n >= 1000 else f"{n} bytes"


def _media_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


@dataclass
class _Body:
    final_url: str
    content_type: str
    charset: str | None
    data: bytes


class Scraper:
    """Fetches pages and images with the address check, a size limit and timeouts (see the module doc).

    `timeout` bounds every network step and the whole fetch (redirects included); `max_chars`
    caps the page text (`Page.truncated` tells).
    """

    def __init__(
        self,
        *,
        timeout: float = 15.0,
        max_bytes: int = 5_000_000,
        max_images: int = 32,
        allow_private: bool = False,
        user_agent: str = DEFAULT_USER_AGENT,
        max_chars: int = MAX_TEXT_CHARS,
        client: httpx.Client | None = None,
    ) -> None:
        self.timeout = float(timeout)
        self.max_bytes = max_bytes
        self.max_images = max_images
        self.allow_private = allow_private
        self.user_agent = user_agent
        self.max_chars = max_chars
        self._client = client or httpx.Client(timeout=self.timeout)
        self._owns_client = client is None

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Scraper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public

    def fetch(self, url: str) -> Page:
        """The page at `url`: HTML (main text via trafilatura), plain text or PDF."""
        fetched_at = utc_now()
        body = self._get(url, max_bytes=self.max_bytes, accept=PAGE_TYPES, noun="page", refused="not a web page")
        try:
            if body.content_type == "application/pdf":
                title, text, date, images = *_pdf_title_and_text(body.data), None, []
            elif body.content_type == "text/plain":
                title, text, date, images = "", _decode(body), None, []
            else:
                title, text, date, images = _read_html(_decode(body), body.final_url, self.max_images)
        except Exception as e:  # a parser failing on a strange page must not end the fact-check
            what = "PDF" if body.content_type == "application/pdf" else "page"
            raise ScrapeError(url, f"unreadable {what} ({type(e).__name__}: {e})") from e
        text = text.strip()
        truncated = len(text) > self.max_chars
        return Page(
            url=url,
            final_url=body.final_url,
            title=title,
            text=text[: self.max_chars] if truncated else text,
            date=date,
            images=images,
            content_type=body.content_type,
            truncated=truncated,
            fetched_at=fetched_at,
        )

    def fetch_image(self, url: str, *, max_bytes: int = 10_000_000) -> bytes:
        """The bytes of the image at `url` (the response must say image/*)."""
        return self._get(url, max_bytes=max_bytes, accept=("image/",), noun="image", refused="not an image").data

    # ------------------------------------------------------------------ the request

    def _get(self, url: str, *, max_bytes: int, accept: tuple[str, ...], noun: str, refused: str) -> _Body:
        """GET with checked redirects, a content-type check and a size limit."""
        deadline = time.monotonic() + self.timeout
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                address = check_url(current, allow_private=self.allow_private)
            except ScrapeError as e:
                if current == url:
                    raise
                raise ScrapeError(url, f"redirected to {current}: {e.reason}", verb=e.verb) from None
            if time.monotonic() > deadline:
                raise ScrapeError(url, f"not complete within {self.timeout:g} s")
            try:
                target, headers, extensions = _pinned(current, address)
            except httpx.InvalidURL as e:
                raise ScrapeError(url, f"not a valid URL ({e})", verb=REFUSED) from None
            try:
                with self._client.stream(
                    "GET",
                    target,
                    headers={"User-Agent": self.user_agent, **headers},
                    extensions=extensions,
                    follow_redirects=False,
                    timeout=self.timeout,
                ) as response:
                    if response.status_code in _REDIRECTS and response.headers.get("location"):
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise ScrapeError(
                            url, f"HTTP {response.status_code}" + (f" at {current}" if current != url else "")
                        )
                    media = _media_type(response)
                    if not media.startswith(accept):
                        raise ScrapeError(url, f"{refused}: {media or 'no content type'}")
                    data = self._read(url, response, max_bytes, deadline, noun)
                    return _Body(current, media, response.charset_encoding, data)
            except httpx.TimeoutException:
                raise ScrapeError(url, f"no answer within {self.timeout:g} s") from None
            except httpx.HTTPError as e:
                raise ScrapeError(url, f"{type(e).__name__}: {e}") from None
        raise ScrapeError(url, f"more than {MAX_REDIRECTS} redirects")

    def _read(self, url: str, response: httpx.Response, max_bytes: int, deadline: float, noun: str) -> bytes:
        too_big = ScrapeError(url, f"{noun} larger than {_size(max_bytes)}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise too_big
        chunks, total = [], 0
        for chunk in response.iter_bytes():
            total += len(chunk)
            if total > max_bytes:
                raise too_big
            if time.monotonic() > deadline:
                raise ScrapeError(url, f"not complete within {self.timeout:g} s")
            chunks.append(chunk)
        return b"".join(chunks)


# --------------------------------------------------------------------------- reading the body


def _decode(body: _Body) -> str:
    """The body as text: the charset the server named, else trafilatura's guess."""
    if body.charset:
        try:
            return body.data.decode(body.charset, errors="replace")
        except LookupError:
            pass
    from trafilatura.utils import decode_file

    return decode_file(body.data)


def _read_html(html: str, url: str, max_images: int) -> tuple[str, str, str | None, list[str]]:
    """Title, main text, ISO date and image URLs of an HTML page."""
    import trafilatura
    from lxml import html as lxml_html

    from ..retrieval.file_text import PlainHTML

    doc = trafilatura.bare_extraction(html, url=url, with_metadata=True, include_comments=False, include_tables=True)
    plain = PlainHTML()
    plain.feed(html)
    plain.close()
    text = (doc.text or "").strip() if doc else ""
    title = " ".join(((doc.title if doc else None) or plain.title).split())
    date = to_iso_date(doc.date) if doc else None
    try:  # as UTF-8 bytes: lxml refuses str input that declares an encoding
        tree = lxml_html.document_fromstring(html.encode("utf-8"), parser=lxml_html.HTMLParser(encoding="utf-8"))
    except (ValueError, lxml_html.etree.ParserError):
        tree = None
    images = _images(tree, url, max_images) if tree is not None else []
    return title, text or plain.text, date, images


def _images(tree, base_url: str, limit: int) -> list[str]:
    """Absolute image URLs: og:image first, then <img> (src, else the first srcset candidate).

    Skips data: URIs, SVGs and tracking pixels (width or height attribute of 2 or less).
    """
    found: list[str] = []
    for meta in tree.xpath("//meta[@property='og:image' or @name='og:image' or @property='og:image:url']"):
        found.append(meta.get("content") or "")
    for img in tree.iter("img"):
        if any(_is_tiny(img.get(attr)) for attr in ("width", "height")):
            continue
        src = (img.get("src") or "").strip()
        if not src or src.startswith("data:"):
            srcset = (img.get("srcset") or "").strip()
            src = srcset.split(",")[0].split()[0] if srcset else ""
        found.append(src)
    out: list[str] = []
    for src in found:
        src = src.strip()
        if not src or src.lower().startswith("data:"):
            continue
        absolute = urljoin(base_url, src)
        if urlsplit(absolute).path.lower().endswith(".svg") or not absolute.startswith(("http://", "https://")):
            continue
        if absolute not in out:
            out.append(absolute)
        if len(out) >= limit:
            break
    return out


def _is_tiny(value: str | None) -> bool:
    try:
        return value is not None and float(value.strip().removesuffix("px")) <= 2
    except ValueError:
        return False


def _pdf_title_and_text(data: bytes) -> tuple[str, str]:
    from ..retrieval.documents import _pdf_title_and_text as read_pdf

    return read_pdf(io.BytesIO(data))  # type: ignore[arg-type]  (pypdf reads paths and streams)
