"""Grounding: is each sentence of an answer supported by some part of the documents it was given?

Every document is cut into parts of whole sentences (verify/windows.py `part_spans`: runs of sentences that fit
beside the longest sentence in the verifier's window, consecutive parts sharing one sentence), so nothing is left
unread however long or many the documents are, and every sentence is read against every part in batches (where the
documents have many parts, against the parts nearest it by embedding: `ground_sentences`). A sentence
is supported when SOME part supports it (the rule of LLM-AggreFact and MiniCheck): its probability of being grounded
is the highest support any part gives it, through the verifier's grounding rule (verifier.json `grounding_rule`,
fitted on the calibration parts of grounding-shaped training sources by `veracity verifier calibrate-grounding`;
without one, the verifier's rule for supported against the rest). Parts are not read joined: a sentence that no
single part supports is not grounded by several read together (that is how wrong answers passed LEAF's rater).

Not grounded, a sentence is "contradicted" when a part refutes it (the verifier's three-way reading of that part:
refuted above one half and addressing the sentence), else "not supported". A verdict is decided when its
probability reaches the rule's `uncertain_below` (chosen so that decided verdicts were right 90% of the time on the
calibration pairs), else uncertain. The part that decided (the most supporting one, or the refuting one) is kept
with its document and character offsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

from .result import LABELS, NOT_ADDRESSED, Verification, binary_label
from .windows import MIN_BUDGET, SPECIAL_TOKENS, part_spans, token_counter

SUPPORTED, NOT_SUPPORTED, CONTRADICTED = "supported", "not_supported", "contradicted"
#: without a fitted grounding rule: supported from one half of the verifier's rule against the rest; decided from 0.9
FALLBACK_UNCERTAIN_BELOW = 0.9
#: the word pieces of a part at most (less where the longest sentence leaves less beside it in the window). Mean
#: balanced accuracy on the held-apart grounding pairs (verify/training/grounding_fit.py): 65.7 with parts as long as
#: the window (256), 67.4 at 128, 69.7 at 64, 68.8 at 32: the small verifier reads a sentence worse among many others
#: (a fact after six unrelated sentences read "refuted" 0.64; alone with its neighbour, supported 0.91)
PART_TOKENS = 64
#: parts read closely (by the cross-encoder) beside each sentence where the documents have many (ground_sentences)
SHORTLIST = 6
EMBED_COST = 0.64  # an embedding of a part against a reading of a part beside a sentence: 64 word pieces against 100


@dataclass(frozen=True)
class Part:
    """A part of a document as it was read: which document, its span [start, end) there, and the verifier's
    three-way reading of the sentence against it."""

    document: int
    start: int
    end: int
    probabilities: Mapping[str, float]


@dataclass
class Grounded:
    """What the verifier concluded about one sentence against all the parts of the documents."""

    label: str  # supported | not_supported | contradicted
    probability: float  # of being grounded (supported), calibrated by the grounding rule
    decided: bool
    support: Part | None  # the part that supports it most (None: there was nothing to read)
    contradiction: Part | None = None  # the part that refutes it, when it is contradicted
    parts: int = 0  # how many parts the documents were cut into (each read: embedded, or beside the sentence)
    read_closely: int = 0  # of them, how many were read beside the sentence by the cross-encoder
    #: the quote: the span [start, end) in the deciding part's document of its one sentence that reads as the whole
    #: part does, when one does (`narrow_quotes`); else the whole part's span
    quote: tuple[int, int] | None = None
    #: per document, the reading of its most supporting part (a document with no text: not enough information)
    per_document: list[Mapping[str, float]] = field(default_factory=list)

    @property
    def confidence(self) -> float:
        """The probability of the label: of grounded for supported, of not grounded otherwise."""
        return self.probability if self.label == SUPPORTED else 1.0 - self.probability

    @property
    def deciding(self) -> Part | None:
        return self.contradiction if self.label == CONTRADICTED else self.support


@dataclass
class GroundingRule:
    """The verifier's grounding rule (verifier.json `grounding_rule`), or the fallback."""

    rule: Mapping | str = "supported_vs_rest"
    uncertain_below: float = FALLBACK_UNCERTAIN_BELOW
    part_tokens: int = PART_TOKENS
    fitted: bool = False

    @classmethod
    def of(cls, verifier) -> GroundingRule:
        settings = getattr(verifier, "settings", {}) or {}
        entry = settings.get("grounding_rule")
        if not entry:  # (a folder's verifier.json may still say how long its parts are: `part_tokens`)
            return cls(
                rule=getattr(verifier, "rest_rule", "supported_vs_rest"),
                part_tokens=int(settings.get("part_tokens", PART_TOKENS)),
            )
        return cls(
            rule={k: entry[k] for k in ("name", "weight", "bias")},
            uncertain_below=float(entry["uncertain_below"]),
            part_tokens=int(entry.get("part_tokens", PART_TOKENS)),
            fitted=True,
        )

    def probability(self, supported: float) -> float:
        """The probability of grounded given the highest support any part gives."""
        label, p = binary_label(supported, 0.0, self.rule)
        return p if label == "supported" else 1.0 - p


def cut_documents(verifier, documents: Sequence[str], longest_sentence: int, part_tokens: int) -> list[list[tuple]]:
    """Per document, the spans of its parts, sized to fit beside a sentence of `longest_sentence` word pieces."""
    count = _counter(verifier)
    room = verifier.max_length - longest_sentence - SPECIAL_TOKENS
    budget = max(min(part_tokens, room), MIN_BUDGET)
    return [part_spans(text, count, budget) for text in documents]


def _counter(verifier):
    tokenizer = getattr(verifier, "tokenizer", None)
    if tokenizer is None:  # a verifier without word pieces (the lexical baseline): words
        return lambda text: len(text.split())
    return token_counter(tokenizer)


def ground_sentences(
    verifier,
    sentences: Sequence[str],
    documents: Sequence[str],
    rule: GroundingRule | None = None,
    *,
    shortlist: int | None = SHORTLIST,
) -> list[Grounded]:
    """Each sentence against the parts of every document (one batch for all): its grounding verdict.

    Every part is read. Where reading every part beside every sentence would cost more than the shortlist
    (`worth_shortlisting`), each part is first embedded once (all-MiniLM-L6-v2, as the dense index embeds passages)
    and each sentence read closely, by the cross-encoder, against the `shortlist` parts nearest it; the others,
    nearer to nothing it says, are not. On the held-apart grounding pairs, the 6 nearest parts of a document decided
    as all of them did (balanced accuracy 69.9 against 69.6; the 4 nearest 69.8, the 2 nearest 68.7)."""
    rule = rule or GroundingRule.of(verifier)
    if not sentences:
        return []
    count = _counter(verifier)
    with getattr(verifier, "_lock", None) or nullcontext():  # a fast tokenizer is not for two threads at once
        longest = max(count(s) for s in sentences)
        spans = cut_documents(verifier, documents, longest, rule.part_tokens)
    parts = [(d, a, b, " ".join(documents[d][a:b].split())) for d, doc_spans in enumerate(spans) for a, b in doc_spans]
    chosen = _nearest(sentences, [text for *_, text in parts], shortlist)
    scored = iter(verifier.score_pairs([(s, parts[j][3]) for s, js in zip(sentences, chosen) for j in js]))
    out = []
    for js in chosen:
        readings = [(parts[j], next(scored)) for j in js]
        found = _conclude([Part(d, a, b, r) for (d, a, b, _), r in readings], rule)
        found.parts = len(parts)
        found.read_closely = len(js)
        best: dict[int, Mapping[str, float]] = {}
        for (d, *_), r in readings:
            if d not in best or r["supported"] > best[d]["supported"]:
                best[d] = r
        found.per_document = [best.get(d, NOTHING) for d in range(len(documents))]
        out.append(found)
    return out


def worth_shortlisting(sentences: int, parts: int, shortlist: int) -> bool:
    """Whether embedding every part and every sentence once, then reading each sentence beside its `shortlist`
    nearest parts, costs less than reading each sentence beside every part (an embedding of a part costs about two
    thirds of a reading beside a sentence: the part alone, without the sentence)."""
    return sentences * parts > EMBED_COST * (sentences + parts) + sentences * shortlist


def _nearest(sentences: Sequence[str], texts: Sequence[str], shortlist: int | None) -> list[list[int]]:
    """Per sentence, the indices of the parts read beside it, in the parts' order: all of them, or (when worth it)
    the `shortlist` nearest by embedding."""
    every = list(range(len(texts)))
    if not shortlist or not texts or not worth_shortlisting(len(sentences), len(texts), shortlist):
        return [every for _ in sentences]
    import numpy as np

    from ..retrieval.dense import Encoder

    vectors = Encoder().encode([*sentences, *texts])
    near = vectors[len(sentences) :] @ vectors[: len(sentences)].T  # (parts, sentences)
    return [sorted(np.argsort(-near[:, i], kind="stable")[:shortlist].tolist()) for i in range(len(sentences))]


NOTHING = {"supported": 0.0, "refuted": 0.0, "nei": 1.0}


def as_verification(g: Grounded) -> Verification:
    """A grounding verdict as the verifier's `Verification` (decide.py reads it): the reading of the part that
    supports most, the document it is in as the deciding passage."""
    part = g.support
    if part is None:
        return Verification(dict(NOTHING), None, list(g.per_document))
    return Verification(dict(part.probabilities), part.document, [dict(r) for r in g.per_document])


def _conclude(parts: list[Part], rule: GroundingRule) -> Grounded:
    """The verdict of the parts read beside a sentence: supported by the most supporting one, else contradicted by
    the most refuting one where it refutes and addresses the sentence, else not supported; decided when the
    verdict's probability reaches the rule's threshold."""
    if not parts:
        return Grounded(NOT_SUPPORTED, rule.probability(0.0), False, None)
    support = max(parts, key=lambda x: x.probabilities["supported"])
    p = rule.probability(support.probabilities["supported"])
    refuting = None if p >= 0.5 else max(parts, key=lambda x: x.probabilities["refuted"])
    if refuting is not None and not (
        refuting.probabilities["refuted"] > 0.5 and refuting.probabilities["nei"] < NOT_ADDRESSED
    ):
        refuting = None
    label = SUPPORTED if p >= 0.5 else CONTRADICTED if refuting is not None else NOT_SUPPORTED
    found = Grounded(label, p, False, support, refuting)
    found.decided = found.confidence >= rule.uncertain_below
    return found


def narrow_quotes(verifier, sentences: Sequence[str], found: list[Grounded], documents: Sequence[str]) -> None:
    """Each supported or contradicted sentence's quote narrowed to the one sentence of its deciding part that reads
    the same way on its own (supported above one half, or refuted above one half), the surest of them; where none
    does (the part's sentences decide only together), the quote stays the whole part. One batch for all."""
    from ..claims.sentences import sentence_spans

    todo: list[tuple[int, list[tuple[int, int]]]] = []
    for i, g in enumerate(found):
        part = g.deciding if g.label in (SUPPORTED, CONTRADICTED) else None
        if part is None:
            continue
        text = documents[part.document]
        spans = [(part.start + x.start, part.start + x.end) for x in sentence_spans(text[part.start : part.end])]
        if len(spans) > 1:
            todo.append((i, spans))
    pairs = [
        (sentences[i], " ".join(documents[found[i].deciding.document][a:b].split()))
        for i, spans in todo
        for a, b in spans
    ]
    readings = iter(verifier.score_pairs(pairs) if pairs else [])
    for i, spans in todo:
        key = "supported" if found[i].label == SUPPORTED else "refuted"
        best, best_p = None, 0.5
        for span in spans:
            p = next(readings)[key]
            if p > best_p:
                best, best_p = span, p
        if best is not None:
            found[i].quote = best


def reading_dict(probabilities: Mapping[str, float]) -> dict[str, float]:
    """A part's three-way reading as results show it: each label's probability to four places."""
    return {k: round(float(probabilities[k]), 4) for k in LABELS}
