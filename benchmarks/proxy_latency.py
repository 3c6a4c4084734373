"""What `veracity proxy` adds to a chat completion, printed as a Markdown table (issue 24).

    .venv/bin/python benchmarks/proxy_latency.py [--n 40] [--n-rater 5] [--threads 1]

An upstream that answers at once (an in-process OpenAI-compatible stub on 127.0.0.1, always the same 5-sentence
answer, so its own time is the same with and without the proxy) is called directly and through `veracity proxy`
(a subprocess; annotate policy, not streamed) with the official `openai` client, one request at a time.
Per answer: added = the proxied request's time - the median direct time; checking = the check's own time (the
stored run's seconds, `veracity.seconds`); overhead = added - checking (HTTP in and out, forwarding, queueing the
run, reading its result). Three checkers: `--pipeline verifier` (each sentence its own BM25 query, the trained
verifier rates: no model call), `--evidence request` (the answer grounded in three documents of 2,000 characters sent
in the request's system message: veracity.grounding, no model call) and LEAF's model rater (the embedded SmolLM2-135M writing each query and rating
each sentence; the response cache off, verifier.use off). The evidence is a small BM25 index built here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ANSWER = (
    "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist. "
    "Its typical symptoms are numbness and tingling of the thumb, index and middle fingers. "
    "The symptoms are often worse at night. "
    "Splints and steroid injections are tried first. "
    "Cutting the transverse carpal ligament frees the nerve when they do not help."
)
DOCS = [
    (
        "cts-cause",
        "Carpal tunnel syndrome",
        "Carpal tunnel syndrome is an entrapment neuropathy: the median nerve is "
        "compressed as it passes through the carpal tunnel at the wrist.",
    ),
    (
        "cts-symptoms",
        "Carpal tunnel symptoms",
        "Numbness and tingling of the thumb, index and middle fingers, often "
        "worse at night, are the typical symptoms of carpal tunnel syndrome.",
    ),
    (
        "cts-release",
        "Carpal tunnel release",
        "Cutting the transverse carpal ligament frees the median nerve when "
        "splints and steroid injections do not help.",
    ),
    (
        "cubital",
        "Cubital tunnel syndrome",
        "In cubital tunnel syndrome the ulnar nerve is compressed at the elbow, "
        "which makes the ring and little fingers numb.",
    ),
    (
        "lithium",
        "Lithium and the kidney",
        "Long-term lithium therapy is the most common drug cause of nephrogenic "
        "diabetes insipidus, with polyuria and thirst.",
    ),
]


def reply() -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 80, "total_tokens": 100},
        }
    ).encode()


def start_upstream() -> tuple[ThreadingHTTPServer, str]:
    body = reply()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers

        def setup(self):
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm and the client's delayed ACK
            # hold the body back ~40 ms, which would be counted against the direct calls
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def start_proxy(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veracity.cli",
            "proxy",
            "--port",
            "0",
            "--rate-limit",
            "0",
            "--log-level",
            "info",
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    for line in proc.stderr:
        m = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, f"http://127.0.0.1:{m.group(1)}/v1"
    raise SystemExit("veracity proxy did not start")


def quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=20, method="inclusive")
    return statistics.median(values), q[18]


def request_documents() -> str:
    """Three documents of about 2,000 characters each, as a RAG app puts them in its system message."""
    texts = [x for _, _, x in DOCS]
    out = []
    for k in range(3):
        doc = ""
        while len(doc) < 2000:
            doc += " ".join(texts[k:] + texts[:k]) + " "
        out.append(f"Document {k + 1}:\n{doc.strip()}")
    return "Answer from these documents.\n\n" + "\n\n".join(out)


def measure(url: str, n: int, warm: int = 2, system: str | None = None) -> list[tuple[float, float | None, dict]]:
    import openai

    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=600)
    out = []
    for i in range(warm + n):
        t0 = time.perf_counter()
        messages = [{"role": "user", "content": f"What is carpal tunnel syndrome? ({i})"}]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        r = client.chat.completions.create(model="stub", messages=messages)
        seconds = time.perf_counter() - t0
        v = (r.model_extra or {}).get("veracity") or {}
        if i >= warm:
            out.append((seconds, v.get("seconds"), v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="answers per row with the verifier (default 40)")
    ap.add_argument("--n-rater", type=int, default=5, help="answers with the model rater (default 5; 0 skips it)")
    ap.add_argument("--threads", type=int, default=1, help="verifier and model threads (default 1)")
    args = ap.parse_args()

    from veracity.retrieval import Document, Index

    work = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    Index.from_documents([Document(id=i, title=t, text=x) for i, t, x in DOCS]).save(work / "index")
    config = work / "config.toml"
    config.write_text(f'[verifier]\nuse = "off"\nthreads = {args.threads}\n')
    verifier_config = work / "verifier.toml"
    verifier_config.write_text(f"[verifier]\nthreads = {args.threads}\n")
    env = {**os.environ, "XDG_DATA_HOME": str(work), "XDG_CACHE_HOME": str(work / "cache")}
    server, upstream = start_upstream()
    direct = [s for s, _, _ in measure(upstream, args.n)]
    base = statistics.median(direct)
    rows = [("direct to the upstream (no proxy)", len(direct), quantiles(direct), None, None)]
    setups = [
        ("`--pipeline verifier`", args.n, ["--pipeline", "verifier", "--config", str(verifier_config)]),
        (
            "`--evidence request` (3 documents of 2,000 characters in the request)",
            args.n,
            ["--evidence", "request", "--config", str(verifier_config)],
        ),
    ]
    if args.n_rater:
        setups.append(
            (
                "model rater (embedded SmolLM2-135M, `--no-cache`)",
                args.n_rater,
                ["--config", str(config), "--no-cache", "--threads", str(args.threads)],
            )
        )
    sentences = None
    for name, n, extra in setups:
        request = "--evidence" in extra
        where = [] if request else ["--index", str(work / "index")]
        proc, url = start_proxy(["--upstream", upstream, *where, "--db", str(work / "runs.sqlite"), *extra], env)
        try:
            got = measure(url, n, system=request_documents() if request else None)
        finally:
            proc.terminate()
            proc.wait(30)
        bad = [v for _, c, v in got if c is None]
        if bad:
            raise SystemExit(f"{name}: a check did not finish: {bad[0]}")
        sentences = got[0][2]["checked"]
        added = [s - base for s, _, _ in got]
        checking = [c for _, c, _ in got]
        overhead = [a - c for a, c in zip(added, checking)]
        rows.append((name, n, quantiles(added), quantiles(checking), quantiles(overhead)))
    server.shutdown()

    def ms(pair):
        return "–" if pair is None else f"{pair[0] * 1000:.1f} / {pair[1] * 1000:.1f}"

    print(
        f"Proxy latency per answer ({sentences}-sentence answer, one request at a time, {os.cpu_count()} CPUs "
        f"visible, verifier threads {args.threads}); milliseconds, p50 / p95\n"
    )
    print(
        "| setup | answers | total added over direct (direct: its own time) | checking | overhead apart from checking |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, n, total, check, over in rows:
        print(f"| {name} | {n} | {ms(total)} | {ms(check)} | {ms(over)} |")


if __name__ == "__main__":
    main()
