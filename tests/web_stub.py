"""A scripted web server on 127.0.0.1 for the web-layer tests: search APIs, pages, images, failures."""

from __future__ import annotations

import io
import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]  # first value of each parameter
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict | list = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    drip: float = 0.0  # seconds between 1 KB chunks of the body
    content_length: bool = True  # False: no Content-Length, the body ends when the connection closes

    def payload(self) -> tuple[bytes, str]:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), "text/html; charset=utf-8"
        return self.body, "application/octet-stream"


Route = Reply | Callable[[Request], Reply]


class WebStub:
    """Answers each path from `routes` (a Reply, or a function of the Request); 404 otherwise.

    `tls=(certfile, keyfile)` serves HTTPS instead of HTTP.
    """

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command,
                    parts.path,
                    {k: v[0] for k, v in parse_qs(parts.query).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                stub.requests.append(request)
                route = stub.routes.get(parts.path, Reply(404, "not found"))
                reply = route(request) if callable(route) else route
                time.sleep(reply.delay)
                data, content_type = reply.payload()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": content_type, **reply.headers}
                    if reply.content_length:
                        headers["Content-Length"] = str(len(data))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    step = 1024 if reply.drip else len(data) or 1
                    for i in range(0, len(data), step):
                        self.wfile.write(data[i : i + step])
                        self.wfile.flush()
                        time.sleep(reply.drip)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _handle

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.scheme = "https" if tls else "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def url(self, path: str = "") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def png_bytes(size: tuple[int, int] = (8, 8), color: str = "red") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def pdf_bytes(text: str, title: str | None = None) -> bytes:
    """A minimal valid one-page PDF showing `text` in Helvetica (offsets computed for the xref), with a
    document title when given. No dependencies."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if title is not None:
        objects.append(b"<< /Title (%s) >>" % title.encode())
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (i, obj))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    info = b" /Info %d 0 R" % len(objects) if title is not None else b""
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref))
    return out.getvalue()
