"""Re-checking a stored run: read each evidence source again, say what changed, and decide again.

    result = recheck(run, config)          # run: a StoredRun (evidence/runs.py reads one from the store or a file)
    result.items, result.decisions, result.exit_code()

Each evidence item of the run (every passage, page and recitation its steps recorded, each once per claim or
sentence it served) is looked up again where it came from, through the same paths a check uses: a page through
the guarded scraper (`web.scrape.Scraper`: an address that now fails the SSRF guard is refused, not fetched), an
index document in the index it came from (`Index.document`), a Wikipedia article's extract from the MediaWiki API it
came from (`web.wikipedia`: the same kind of extract asked for again, the API's address checked by the same guard).
Its status:

- unchanged: the source text has the same SHA-256, or the quote still stands in it word for word;
- changed: the quote is no longer in the source; `now` is what stands in its place (at its offsets, its end moved by
  what was inserted or removed inside it), `diff` a short word diff of the two;
- gone: the page answers 404 or 410, the document is no longer in its index, or the index folder is gone, or the
  article no longer exists;
- unreachable: the page or the index could not be read (timeout, HTTP error, a damaged index);
- refused: the page's address now fails the address guard (private, loopback, ...): reported, never fetched;
- not re-checkable: the model's memory (not a source), or a record without a content hash (stored by an older
  veracity, or a search provider's snippet): said per item, the item kept as it was.

Then the decision is taken again with the trained verifier (`verify.decide.check_evidence`, as the evidence-only
pipelines and the systems' verifier steps take it): on the evidence as stored and on the evidence as it stands now
(changed items with what they read now; gone ones left out; the others, unreachable and refused ones included, as
stored). The verdict holds when both readings give the same label.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..steps import MEMORY_SOURCE
from ..trace import Tracer
from ..types import BINARY_LABELS, RECITED, Evidence
from .quotes import aligned_span, locate, short_diff, utc_now
from .steps import (CHANGED, GONE, NOT_RECHECKABLE, REFUSED, STATUSES, UNCHANGED, UNREACHABLE, RecheckDecision,
                    RecheckItem)

if TYPE_CHECKING:
    from ..config import Config
    from ..retrieval.index import Index
    from ..retrieval.pg_index import PgIndex
    from ..retrieval.sharded import ShardedIndex
    from ..trace import Listener
    from ..web.wikipedia import ArticleRef

#: exit statuses of `veracity recheck` (2: a user error, 3: a backend error, as every command)
EXIT_UNCHANGED, EXIT_CHANGED, EXIT_INCOMPLETE = 0, 1, 4
LEAF_LABELS = ("Supported", "Not Supported")
MEMORY_SOURCES = (RECITED, "model knowledge (closed-book)")
MAX_FETCHES = 4  # pages read at once


@dataclass
class StoredRun:
    """What a recheck reads of a run: its claim, pipeline, model, verdict and steps (as stored)."""

    claim: str
    pipeline: str
    model: str
    verdict: dict[str, Any]
    steps: list[dict[str, Any]]
    id: str | None = None  # its id in the run store; None for a report file
    origin: str = ""  # "run ID" or the report file's path
    date: str | None = None  # the claim's date


@dataclass
class Found:
    """An evidence item of a run: the record as stored, and the claim or sentence it is evidence for."""

    group: str
    stored: str | None  # the run's label for that claim or sentence
    labels: str  # "claim": the pipeline's labels; "leaf": Supported / Not Supported
    evidence: dict[str, Any]
    read_as: str = ""  # the sentence as the verifier read it when it differs (a LEAF sentence's pronoun resolved)


# -- finding the evidence of a run ------------------------------------------------------------------------------

def evidence_of(run: StoredRun) -> list[Found]:
    """Every evidence item of the run's steps, each once per claim or sentence it served, in order."""
    out: list[Found] = []
    seen: set[tuple] = set()
    label = run.verdict.get("label") if isinstance(run.verdict, Mapping) else None
    for step in run.steps:
        if not isinstance(step, Mapping):
            continue
        stage = step.get("stage")
        read_as = ""
        if stage == "leaf_sentence":
            group, stored, labels = str(step.get("sentence") or ""), step.get("rating"), "leaf"
            read_as = str(step.get("read_as") or "")
        elif stage == "text_claim":
            group, stored, labels = str(step.get("text") or ""), step.get("label"), "claim"
        else:
            group, stored, labels = run.claim, label, "claim"
        for key in ("evidence", "results"):
            records = step.get(key)
            if not isinstance(records, list):
                continue
            for e in records:
                if not isinstance(e, Mapping) or not isinstance(e.get("text"), str):
                    continue
                k = (group, e.get("url"), e.get("doc_id"), e.get("text"), e.get("quote_start"))
                if k not in seen:
                    seen.add(k)
                    out.append(Found(group, stored if isinstance(stored, str) else None, labels, dict(e), read_as))
    return out


NO_EVIDENCE = ("there is nothing to re-check: this run read no evidence (no passage, page or document), so there is "
               "no source to read again; check against sources (an index, a search backend, or the evidence given "
               "with the claim) to have something to re-check")
MEMORY_ONLY = ("there is nothing to re-check: this run read no evidence source, only the model's memory (what it "
               "recited is not a source), so there is no source to read again; check the claim against sources (an "
               "index, a search backend, or the evidence given with it) to have something to re-check")


def nothing_to_recheck(steps: Iterable[Any]) -> str | None:
    """Why a run with these steps has nothing to re-check (it read no evidence, or only the model's memory), or
    None when it read some source. The page offers no Re-check button for such a run and says this instead, and
    POST /api/checks/{id}/recheck answers it with a 409."""
    found = evidence_of(StoredRun(claim="", pipeline="", model="", verdict={}, steps=list(steps)))
    if not found:
        return NO_EVIDENCE
    if all(_is_memory(f.evidence) for f in found):
        return MEMORY_ONLY
    return None


# -- reading the sources again ----------------------------------------------------------------------------------

@dataclass
class Read:
    """A source read again: its text and hash, or the status and reason why it could not be read."""

    text: str | None = None
    sha256: str | None = None
    status: str | None = None
    reason: str = ""
    at: str = ""


class Sources:
    """Reads sources again through the paths a check reads them by, each source once."""

    def __init__(self, *, allow_private: bool = False, timeout: float = 15.0,
                 indexes: Iterable[str | None] = ()) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        #: index specs given to this recheck (--index): a PostgreSQL index's evidence names it without its password
        self.known_indexes = [i for i in indexes if i]
        self._pages: dict[str, Read] = {}
        self._indexes: dict[str, Index | ShardedIndex | Read] = {}
        self._articles: dict[ArticleRef, Read] = {}

    def fetch_all(self, urls: Iterable[str]) -> None:
        """Read these pages (a few at once), so that `page` finds them."""
        todo = [u for u in dict.fromkeys(urls) if u not in self._pages]
        if not todo:
            return
        from ..web.scrape import Scraper

        with Scraper(timeout=self.timeout, allow_private=self.allow_private) as scraper:
            with ThreadPoolExecutor(max_workers=min(MAX_FETCHES, len(todo))) as pool:
                for url, read in zip(todo, pool.map(lambda u: _fetch(scraper, u), todo)):
                    self._pages[url] = read

    def page(self, url: str) -> Read:
        self.fetch_all([url])
        return self._pages[url]

    def read_articles(self, refs: Iterable["ArticleRef"]) -> None:
        """Ask each Wikipedia API again for these articles' extracts (lead sections in one request per API, whole
        articles one by one), so that `article` finds them."""
        from ..web.base import SearchError
        from ..web.scrape import REFUSED as REFUSED_VERB
        from ..web.scrape import ScrapeError, check_url
        from ..web.wikipedia import WikipediaSearch

        by_api: dict[tuple[str, str], list[ArticleRef]] = {}
        for ref in dict.fromkeys(refs):
            if ref not in self._articles:
                by_api.setdefault((ref.api, ref.language), []).append(ref)
        for (api, language), todo in by_api.items():
            at = utc_now()
            try:
                check_url(api, allow_private=self.allow_private)
            except ScrapeError as e:
                status = REFUSED if e.verb == REFUSED_VERB else UNREACHABLE
                read = Read(status=status, reason=f"the Wikipedia API was not asked: {e.reason}" if status == REFUSED
                            else f"the Wikipedia API could not be reached ({e.reason})", at=at)
                self._articles.update((ref, read) for ref in todo)
                continue
            with WikipediaSearch(language, base_url=api, timeout=self.timeout) as wiki:
                for intro in (True, False):
                    kind = [ref for ref in todo if ref.intro == intro]
                    if not kind:
                        continue
                    try:
                        found = wiki.articles([ref.pageid for ref in kind], intro=intro)
                    except SearchError as e:
                        self._articles.update((ref, Read(status=UNREACHABLE, reason=f"the article could not be read "
                                                         f"({e})", at=at)) for ref in kind)
                        continue
                    for ref in kind:
                        article = found.get(ref.pageid)
                        self._articles[ref] = (
                            Read(text=article.text, sha256=article.sha256, at=article.retrieved_at) if article else
                            Read(status=GONE, reason=f"the article (page id {ref.pageid}) is no longer on {api}",
                                 at=at))

    def article(self, ref: "ArticleRef") -> Read:
        self.read_articles([ref])
        return self._articles[ref]

    def document(self, index_path: str, doc_id: str) -> Read:
        index = self._index(index_path)
        if isinstance(index, Read):
            return index
        found = index.document(doc_id)
        at = index.manifest.get("created") or ""
        if found is None:
            return Read(status=GONE, reason=f"document {doc_id!r} is no longer in the index {index_path}", at=at)
        text, digest = found
        return Read(text=text, sha256=digest, at=at)

    def _index(self, path: str) -> "Index | ShardedIndex | PgIndex | Read":
        if path not in self._indexes:
            from ..errors import IndexError_, UserError
            from ..retrieval.pg_index import is_pg_spec, resolve_shown
            from ..retrieval.sharded import open_index

            if is_pg_spec(path):
                try:
                    self._indexes[path] = open_index(resolve_shown(path, self.known_indexes))
                except (IndexError_, UserError) as e:
                    gone = str(e).startswith("no index ")
                    self._indexes[path] = Read(status=GONE if gone else UNREACHABLE, reason=(
                        f"the index {path} is gone" if gone else f"the index cannot be read: {e}"), at=utc_now())
            elif not Path(path).exists():
                self._indexes[path] = Read(status=GONE, reason=f"the index {path} is gone", at=utc_now())
            else:
                try:
                    self._indexes[path] = open_index(path)
                except (IndexError_, UserError, OSError) as e:
                    self._indexes[path] = Read(status=UNREACHABLE, reason=f"the index cannot be read: {e}",
                                               at=utc_now())
        return self._indexes[path]


def _fetch(scraper: Any, url: str) -> Read:
    from ..evidence.quotes import sha256_text
    from ..web.scrape import REFUSED as REFUSED_VERB
    from ..web.scrape import ScrapeError

    at = utc_now()
    try:
        page = scraper.fetch(url)
    except ScrapeError as e:
        if e.verb == REFUSED_VERB:
            return Read(status=REFUSED, reason=f"not fetched: {e.reason}", at=at)
        if e.reason.startswith(("HTTP 404", "HTTP 410")):
            return Read(status=GONE, reason=f"the page is gone ({e.reason})", at=at)
        return Read(status=UNREACHABLE, reason=f"the page could not be read ({e.reason})", at=at)
    return Read(text=page.text, sha256=sha256_text(page.text), at=page.fetched_at or at)


def _index_of(e: Mapping[str, Any]) -> str | None:
    how = e.get("found_by")
    return how.get("index") if isinstance(how, Mapping) and isinstance(how.get("index"), str) else None


def _article_of(e: Mapping[str, Any]) -> "ArticleRef | None":
    """The Wikipedia article a record quotes (its found_by names the API and the page), else None."""
    from ..web.wikipedia import ArticleRef

    return ArticleRef.of(e.get("found_by"))


def _is_memory(e: Mapping[str, Any]) -> bool:
    """The item is the model's memory (recited or stated), not a source it read."""
    return bool(e.get("memory")) or e.get("source") in MEMORY_SOURCES


def _not_recheckable(e: Mapping[str, Any]) -> str | None:
    """Why an item cannot be checked again (None: it can)."""
    if _is_memory(e):
        return f"{MEMORY_SOURCE}: there is no source to read again"
    if not e.get("source_sha256"):
        if not e.get("url") and not e.get("doc_id"):
            return "it names no source to read again"
        return ("it was stored without a hash of its source text (by an older veracity, or it is a search "
                "provider's snippet): there is nothing to compare the source with; kept as it was")
    how = e.get("found_by") if isinstance(e.get("found_by"), Mapping) else {}
    if e.get("doc_id") and not _index_of(e) and how.get("retriever"):
        return "its index was built in memory and not saved: there is nothing to look it up in"
    if not _index_of(e) and not e.get("url"):
        return "it names no page or index to read again"
    return None


def check_item(e: Mapping[str, Any], sources: Sources) -> tuple[str, str, str | None, str, str]:
    """(status, reason, the quote as it reads now, diff, when it was read again) of one stored evidence record."""
    why = _not_recheckable(e)
    if why:
        return NOT_RECHECKABLE, why, None, "", ""
    index, article = _index_of(e), _article_of(e)
    read = (sources.article(article) if article else sources.document(index, str(e.get("doc_id"))) if index
            else sources.page(str(e["url"])))
    if read.status:
        return read.status, read.reason, None, "", read.at
    quote, start, end = str(e.get("text") or ""), e.get("quote_start"), e.get("quote_end")
    text = read.text or ""
    if read.sha256 and read.sha256 == e.get("source_sha256"):
        return UNCHANGED, "the source reads the same (same SHA-256)", quote, "", read.at
    span = locate(quote, text, near=start if isinstance(start, int) else None)
    if span is not None:
        moved = f" (now at character {span[0]}, was {start})" if isinstance(start, int) and span[0] != start else ""
        return UNCHANGED, f"the source changed elsewhere; the quote still stands in it word for word{moved}", \
            quote, "", read.at
    now = text[slice(*aligned_span(quote, text, start, end))] if isinstance(start, int) and isinstance(end, int) else ""
    if not now.strip():
        return CHANGED, "the quote is no longer in the source, which now ends before its place", now, \
            short_diff(quote, ""), read.at
    return CHANGED, "the quote is no longer in the source; at its place the source now reads otherwise", now, \
        short_diff(quote, now), read.at


# -- the decision again -----------------------------------------------------------------------------------------

def _claim_labels(run: StoredRun, config: "Config") -> tuple[str, ...]:
    try:
        from ..registry import get_pipeline

        labels = tuple(get_pipeline(run.pipeline, config).labels)
    except Exception:  # a pipeline this version lacks (or that cannot be built here): the two labels
        labels = BINARY_LABELS
    return labels if len(labels) >= 2 else BINARY_LABELS


def decide(run: StoredRun, found: list[Found], items: list[RecheckItem], config: "Config",
           tracer: Tracer) -> list[RecheckDecision]:
    """The verifier's label per claim or sentence on the evidence as stored and as it stands now."""
    from ..verify.decide import check_evidence

    kind = "lexical" if run.pipeline == "lexical" else "verifier"
    groups: dict[str, list[tuple[Found, RecheckItem]]] = {}
    for f, item in zip(found, items):
        groups.setdefault(f.group, []).append((f, item))
    claim_labels = _claim_labels(run, config)
    out = []
    for group, pairs in groups.items():
        first = pairs[0][0]
        labels = LEAF_LABELS if first.labels == "leaf" else claim_labels
        if first.stored and first.stored not in labels:
            labels = (*labels, first.stored)
        before = [Evidence.from_dict(f.evidence) for f, _ in pairs]
        now = [e for e in (_as_now(f.evidence, item) for f, item in pairs) if e is not None]
        unread = sum(item.status in (UNREACHABLE, REFUSED) for _, item in pairs)
        claim = first.read_as or group  # read as the run read it
        try:
            is_ = check_evidence(config.verifier, tracer, claim, now, labels, kind=kind)
            # nothing changed or gone: the evidence now is the evidence as stored, and so is the decision
            same = all(item.status not in (CHANGED, GONE) for _, item in pairs)
            was = is_ if same else check_evidence(config.verifier, Tracer(), claim, before, labels, kind=kind)
            out.append(RecheckDecision(group=group, verifier=kind, stored=first.stored, before=was.label,
                                       now=is_.label, confidence=round(is_.confidence, 4), holds=was.label == is_.label,
                                       items=len(now),
                                       note=_note(was.label, is_.label, first.stored, len(now), unread)))
        except Exception as e:  # noqa: BLE001 - the items are reported whatever the verifier does
            out.append(RecheckDecision(group=group, verifier=kind, stored=first.stored, items=len(now),
                                       note=f"the decision could not be taken again ({type(e).__name__}: {e})"))
    return out


def _as_now(e: Mapping[str, Any], item: RecheckItem) -> Evidence | None:
    """The item as it stands now: None when its source is gone; as stored when it could not be read again (what it
    says now is not known: that is said by the item and the exit status, not guessed)."""
    if item.status == GONE:
        return None
    ev = Evidence.from_dict(dict(e))
    if item.status == CHANGED:
        ev.text = item.now or ""
        return ev if ev.text.strip() else None
    return ev


def _note(before: str, now: str, stored: str | None, n: int, unread: int) -> str:
    said = f"; the run said {stored}" if stored and stored != before else ""
    said += f" ({unread} of them could not be read again and count as stored)" if unread else ""
    if before == now:
        return f"the evidence as it stands now ({n} item(s)) leads to {now}, as the evidence as stored did{said}"
    return f"the evidence as stored led to {before}, as it stands now ({n} item(s)) to {now}{said}"


# -- the whole recheck -----------------------------------------------------------------------------------------

@dataclass
class Recheck:
    run: StoredRun
    items: list[RecheckItem]
    decisions: list[RecheckDecision]
    steps: list[dict[str, Any]] = field(default_factory=list)  # the trace of the recheck, as stored
    seconds: float = 0.0
    checked_at: str = ""

    def counts(self) -> dict[str, int]:
        return {s: sum(i.status == s for i in self.items) for s in STATUSES}

    @property
    def changed(self) -> bool:
        """Something changed: an item changed or is gone, or a decision no longer holds."""
        return any(i.status in (CHANGED, GONE) for i in self.items) or any(d.holds is False for d in self.decisions)

    @property
    def incomplete(self) -> bool:
        """Some source could not be read again (unreachable, refused, stored without a hash: not the memory)."""
        return any(i.status in (UNREACHABLE, REFUSED) or
                   (i.status == NOT_RECHECKABLE and not i.reason.startswith(MEMORY_SOURCE)) for i in self.items)

    @property
    def holds(self) -> bool | None:
        """Whether the verdict holds (None: no decision could be taken again)."""
        known = [d.holds for d in self.decisions if d.holds is not None]
        return all(known) if known else None

    def exit_code(self) -> int:
        return EXIT_CHANGED if self.changed else EXIT_INCOMPLETE if self.incomplete else EXIT_UNCHANGED

    def headline(self) -> str:
        if self.holds is False:
            return "Verdict may not hold"
        if self.changed:
            return "Evidence changed, verdict holds" if self.holds else "Evidence changed"
        if self.incomplete:
            return "Could not re-check everything"
        return "Evidence unchanged"

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items() if n)
        holds = {True: "the verdict holds", False: "the verdict may not hold", None: "no decision taken again"}
        return f"{len(self.items)} evidence item(s): {counts or 'none'}; {holds[self.holds]}"

    def to_dict(self) -> dict[str, Any]:
        return {"rechecks": self.run.id, "origin": self.run.origin, "claim": self.run.claim,
                "pipeline": self.run.pipeline, "verdict": self.run.verdict.get("label"),
                "checked_at": self.checked_at, "headline": self.headline(), "summary": self.summary(),
                "changed": self.changed, "incomplete": self.incomplete, "holds": self.holds,
                "exit_status": self.exit_code(), "counts": self.counts(),
                "items": [i.data for i in self.items], "decisions": [d.data for d in self.decisions]}


def recheck(run: StoredRun, config: "Config", *, listeners: "list[Listener] | None" = None,
            sources: Sources | None = None) -> Recheck:
    """Read every evidence source of `run` again, then take the decision again (see the module doc)."""
    t0 = time.perf_counter()
    checked_at = utc_now()
    tracer = Tracer(listeners)
    tracer.emit("claim", text=run.claim, pipeline="recheck", model=run.model)
    sources = sources or Sources(allow_private=config.defame.allow_private_addresses, timeout=config.defame.timeout,
                                 indexes=[config.index])
    found = evidence_of(run)
    readable = [f.evidence for f in found if not _not_recheckable(f.evidence)]
    articles = {id(e): _article_of(e) for e in readable}
    sources.read_articles(a for a in articles.values() if a is not None)
    sources.fetch_all(str(e["url"]) for e in readable if not _index_of(e) and articles[id(e)] is None)
    items = []
    for n, f in enumerate(found, start=1):
        status, reason, now, diff, at = check_item(f.evidence, sources)
        items.append(tracer.emit(RecheckItem(n=n, group=f.group, status=status, reason=reason, evidence=f.evidence,
                                             now=now, diff=diff, checked_at=at)))
    decisions = [tracer.emit(d) for d in decide(run, found, items, config, tracer)] if found else []
    result = Recheck(run, items, decisions, seconds=time.perf_counter() - t0, checked_at=checked_at)
    tracer.emit("verdict", label=result.headline(), rationale=result.summary(), confidence=None)
    result.steps = tracer.to_list()
    return result
