"""`veracity recheck` over a rebuilt local index: is every changed evidence item found, and is there any false alarm?

1. A corpus of Wikipedia pages from FEVEROUS-S dev (the gold evidence sentences of `--docs` claims, grouped by
   page; `[[link|text]]` markup read as its text) is indexed with `veracity index build`.
2. `veracity serve` (no model: the evidence-only `verifier` pipeline) stores `--runs` checks of the first claims,
   each with the passages it retrieved as evidence (POST /api/checks, followed to the end).
3. Four documents that these runs quote are edited and the index is rebuilt at the same path: two get a word
   changed inside their text (the quotes of them no longer stand), one gets a sentence put in front (every quote of
   it still stands, at other offsets: nothing changed that anyone quoted), one is removed.
4. `veracity recheck RUN_ID --db FILE --json` runs on every stored run; each item's status is compared with the
   truth computed from the corpus itself: changed when its quote no longer stands in its document's new text, gone
   when the document was removed, unchanged otherwise.

Prints Markdown tables: items per status, every truly changed item and what recheck said of it, false alarms
(reported changed or gone, but unchanged), misses, exit statuses and time per recheck.

    python benchmarks/recheck_index.py                 # 20 runs over the pages of 60 claims (about 3 minutes)
    python benchmarks/recheck_index.py --runs 5 --docs 20
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
FEVEROUS = ROOT.parent / "shared" / "benchmarks" / "feverous_s" / "dev_600.json"
sys.path.insert(0, str(ROOT / "tests"))
from conftest import VeracityServer, server_env  # noqa: E402

from veracity.evidence.stored import evidence_of  # noqa: E402
from veracity.server.rechecks import run_from_store  # noqa: E402
from veracity.server.store import RunStore  # noqa: E402

LINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")


def corpus(n: int) -> tuple[list[dict], list[str]]:
    """Documents (one per Wikipedia page named in the evidence of the first `n` claims) and those claims."""
    items = json.loads(FEVEROUS.read_text())[:n]
    pages: dict[str, list[str]] = {}
    for it in items:
        for line in str(it.get("evidence") or "").splitlines():
            title, _, sentence = line.partition("\t")
            if title.strip() and sentence.strip():
                text = LINK.sub(r"\1", sentence.strip())
                if text not in pages.setdefault(title.strip(), []):
                    pages[title.strip()].append(text)
    docs = [
        {
            "id": title.replace(" ", "_"),
            "title": title,
            "url": f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}",
            "text": " ".join(sentences),
        }
        for title, sentences in pages.items()
    ]
    return docs, [str(it["claim"]) for it in items]


def write(path: Path, docs: list[dict]) -> None:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))


def veracity(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [sys.executable, "-m", "veracity.cli", *args], capture_output=True, text=True, env=env, timeout=600
    )
    if check and r.returncode not in (0, 1, 4):
        raise SystemExit(f"veracity {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-500:]}")
    return r


def edit_word(text: str) -> str:
    """A word in the middle of the text changed (a number made one larger, else the word negated)."""
    words = list(re.finditer(r"\S+", text))
    for m in words[len(words) // 3 :] + words[: len(words) // 3]:
        if re.fullmatch(r"\d{1,4}[.,;]?", m.group(0)):
            digits = re.match(r"\d+", m.group(0)).group(0)
            return text[: m.start()] + str(int(digits) + 1) + text[m.start() + len(digits) :]
    m = words[len(words) // 2]
    return text[: m.start()] + "not " + text[m.start() :]


def store_runs(base: Path, claims: list[str], env: dict[str, str]) -> tuple[Path, list[str]]:
    db = base / "runs.sqlite"
    rules = base / "no-model.json"  # the verifier pipeline calls no model: a scripted one that knows nothing
    rules.write_text(json.dumps({"rules": []}))
    srv = VeracityServer(
        ["--model", f"scripted:{rules}", "--index", str(base / "idx"), "--rate-limit", "0", "--max-concurrent", "1"],
        db=db,
        env=env,
        cwd=base,
    ).start(timeout=120)
    ids = []
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            for claim in claims:
                r = client.post("/api/checks", json={"claim": claim[:2000], "pipeline": "verifier"})
                r.raise_for_status()
                ids.append(r.json()["id"])
            for run_id in ids:
                while client.get(f"/api/checks/{run_id}").json()["status"] in ("queued", "running"):
                    time.sleep(0.1)
    finally:
        srv.stop()
    return db, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="checks stored and rechecked (default 20)")
    ap.add_argument("--docs", type=int, default=60, help="claims whose evidence pages make the corpus (default 60)")
    args = ap.parse_args()
    docs, claims = corpus(max(args.docs, args.runs))
    with tempfile.TemporaryDirectory(prefix="veracity-recheck-") as tmp:
        base = Path(tmp)
        env = server_env(base)
        write(base / "corpus.jsonl", docs)
        t0 = time.perf_counter()
        veracity("index", "build", str(base / "corpus.jsonl"), "--out", str(base / "idx"), env=env)
        db, ids = store_runs(base, claims[: args.runs], env)
        stored = time.perf_counter() - t0

        # which documents the stored runs quote, most quoted first: four of them are edited or removed
        used: Counter[str] = Counter()
        store = RunStore(db)
        for run_id in ids:
            used.update(f.evidence.get("doc_id") for f in evidence_of(run_from_store(store, run_id)))
        chosen = [d for d, _ in used.most_common() if d][:4]
        if len(chosen) < 4:
            raise SystemExit(f"the runs quote only {len(chosen)} documents: give more --runs")
        edits = {
            chosen[0]: "word changed",
            chosen[1]: "word changed",
            chosen[2]: "sentence put in front",
            chosen[3]: "removed",
        }
        new_docs = []
        for d in docs:
            what = edits.get(d["id"])
            if what == "removed":
                continue
            if what == "word changed":
                d = {**d, "text": edit_word(d["text"])}
            elif what == "sentence put in front":
                d = {**d, "text": "This article was revised for the benchmark. " + d["text"]}
            new_docs.append(d)
        write(base / "corpus.jsonl", new_docs)
        veracity("index", "build", str(base / "corpus.jsonl"), "--out", str(base / "idx"), env=env)
        new_text = {d["id"]: d["text"] for d in new_docs}

        statuses: Counter[str] = Counter()
        exits: Counter[int] = Counter()
        truly_changed, false_alarms, missed, seconds = [], [], [], []
        moved: Counter[str] = Counter()  # items of the document with a sentence put in front: status
        holds = Counter()
        for run_id in ids:
            t = time.perf_counter()
            r = veracity("recheck", run_id, "--db", str(db), "--json", env=env)
            seconds.append(time.perf_counter() - t)
            doc = json.loads(r.stdout)
            exits[r.returncode] += 1
            holds[doc["holds"]] += 1
            for item in doc["items"]:
                e = item["evidence"]
                statuses[item["status"]] += 1
                doc_id = e.get("doc_id")
                truth = (
                    "gone"
                    if doc_id not in new_text
                    else "changed"
                    if e["text"] not in new_text[doc_id]
                    else "unchanged"
                )
                reported = item["status"]
                if edits.get(doc_id) == "sentence put in front":
                    moved[reported] += 1
                row = (run_id, doc_id, edits.get(doc_id, "-"), truth, reported, item.get("diff") or "")
                if truth != "unchanged":
                    truly_changed.append(row)
                    if reported not in ("changed", "gone") or reported != truth:
                        missed.append(row)
                elif reported in ("changed", "gone"):
                    false_alarms.append(row)

    print(
        f"# recheck over a rebuilt index: {len(ids)} stored runs, {len(docs)} documents "
        f"(FEVEROUS-S dev pages), edits: " + "; ".join(f"{d} {w}" for d, w in edits.items()) + "\n"
    )
    print(f"Index built and {len(ids)} verifier runs stored through `veracity serve` in {stored:.0f} s.\n")
    print("| status | items |\n|---|---:|")
    for s in ("unchanged", "changed", "gone", "unreachable", "refused", "not re-checkable"):
        print(f"| {s} | {statuses[s]} |")
    print(f"| **all** | **{sum(statuses.values())}** |\n")
    found = len(truly_changed) - len(missed)
    print(
        f"Truly changed items (quote no longer in its document, or the document removed): {len(truly_changed)}; "
        f"found: {found}; missed: {len(missed)}; false alarms: {len(false_alarms)}.\n"
    )
    print(
        "Quotes of the document with a sentence put in front (their offsets moved, their words did not): "
        + (", ".join(f"{n} {s}" for s, n in moved.items()) or "none quoted")
        + ".\n"
    )
    print("| run | document | edit | truth | recheck said | diff |\n|---|---|---|---|---|---|")
    for run_id, doc_id, what, truth, reported, diff in truly_changed + false_alarms:
        print(f"| {run_id} | {doc_id} | {what} | {truth} | {reported} | {diff[:90].replace('|', '/')} |")
    print()
    print("| exit status | runs |\n|---:|---:|")
    for code, n in sorted(exits.items()):
        print(f"| {code} | {n} |")
    print(
        "\nVerdict holds (verifier again, evidence as it stands now vs as stored): "
        + ", ".join(f"{k}: {v}" for k, v in holds.items())
        + "."
    )
    print(
        f"Seconds per `veracity recheck` (a process each, the verifier loaded each time): "
        f"median {sorted(seconds)[len(seconds) // 2]:.1f}, max {max(seconds):.1f}."
    )


if __name__ == "__main__":
    main()
