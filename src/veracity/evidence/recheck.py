"""Re-checking a stored run: read each evidence source again, say what changed, and decide again.

    result = recheck(run, config)          # run: a StoredRun (server/rechecks.py reads one from the store or a file)
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

This module runs the whole recheck; its parts are beside it: `stored` (the run as stored and its evidence items),
`sources` (each source read again, each item compared with it), `decision` (the decision taken again) and `result`
(the `Recheck` and the exit status).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..quotes import utc_now
from ..trace import Tracer
from .decision import decide
from .result import Recheck
from .sources import Sources, article_of, check_item, index_of, not_recheckable
from .steps import RecheckItem
from .stored import StoredRun, evidence_of

if TYPE_CHECKING:
    from ..config import Config
    from ..trace import Listener


def recheck(
    run: StoredRun, config: Config, *, listeners: list[Listener] | None = None, sources: Sources | None = None
) -> Recheck:
    """Read every evidence source of `run` again, then take the decision again (see the module doc)."""
    t0 = time.perf_counter()
    checked_at = utc_now()
    tracer = Tracer(listeners)
    tracer.emit("claim", text=run.claim, pipeline="recheck", model=run.model)
    sources = sources or Sources(
        allow_private=config.defame.allow_private_addresses, timeout=config.defame.timeout, indexes=[config.index]
    )
    found = evidence_of(run)
    readable = [f.evidence for f in found if not not_recheckable(f.evidence)]
    articles = {id(e): article_of(e) for e in readable}
    sources.read_articles(a for a in articles.values() if a is not None)
    sources.fetch_all(str(e["url"]) for e in readable if not index_of(e) and articles[id(e)] is None)
    items = []
    for n, f in enumerate(found, start=1):
        status, reason, now, diff, at = check_item(f.evidence, sources)
        items.append(
            tracer.emit(
                RecheckItem(
                    n=n,
                    group=f.group,
                    status=status,
                    reason=reason,
                    evidence=f.evidence,
                    now=now,
                    diff=diff,
                    checked_at=at,
                )
            )
        )
    decisions = [tracer.emit(d) for d in decide(run, found, items, config, tracer)] if found else []
    result = Recheck(run, items, decisions, seconds=time.perf_counter() - t0, checked_at=checked_at)
    tracer.emit("verdict", label=result.headline(), rationale=result.summary(), confidence=None)
    result.steps = tracer.to_list()
    return result
