"""Synthetic training pairs made from evidence sentences (in the manner of FactCC's transformations).

From one sentence `s` of a page:
- supported: `s` itself or `s` trimmed (a trailing clause or a parenthesis dropped), checked against `s`
  alone or against `s` among other sentences of the page;
- refuted: `s` with one fact changed (a number or year, a name swapped for another name on the same page, a
  negation added or removed, a word turned into its opposite), checked against the original;
- not enough information: another sentence of the same page checked against `s` (same topic, no support).

And from a real claim and its evidence (`other_subject`): the evidence about someone else, its subject's name
replaced by another claim's subject, so it no longer says anything about the claim's subject (nei).
"""

from __future__ import annotations

import random
import re

from ..text import STOPWORDS, tokens

OPPOSITES = {
    "first": "last",
    "last": "first",
    "before": "after",
    "after": "before",
    "more": "fewer",
    "fewer": "more",
    "larger": "smaller",
    "smaller": "larger",
    "largest": "smallest",
    "smallest": "largest",
    "won": "lost",
    "lost": "won",
    "increased": "decreased",
    "decreased": "increased",
    "north": "south",
    "south": "north",
    "east": "west",
    "west": "east",
    "highest": "lowest",
    "lowest": "highest",
    "oldest": "youngest",
    "youngest": "oldest",
    "older": "younger",
    "younger": "older",
    "early": "late",
    "late": "early",
    "earlier": "later",
    "later": "earlier",
    "male": "female",
    "female": "male",
    "born": "died",
    "higher": "lower",
    "lower": "higher",
    "longest": "shortest",
    "shortest": "longest",
    "success": "failure",
    "successful": "unsuccessful",
    "positive": "negative",
    "negative": "positive",
    "above": "below",
    "below": "above",
    "major": "minor",
    "minor": "major",
    "public": "private",
    "private": "public",
    "allowed": "forbidden",
    "accepted": "rejected",
    "rejected": "accepted",
    "began": "ended",
    "ended": "began",
    "entered": "left",
    "joined": "left",
    "inside": "outside",
    "outside": "inside",
    "maximum": "minimum",
}
_AUX = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|did|does|do|should)\b")
_NOT = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|did|does|do|should) not\b")
_NUM = re.compile(r"\b\d[\d,]*\b")


def change_number(s: str, rng: random.Random) -> str | None:
    found = list(_NUM.finditer(s))
    if not found:
        return None
    m = rng.choice(found)
    raw = m.group(0)
    try:
        n = int(raw.replace(",", ""))
    except ValueError:
        return None
    if 1000 <= n <= 2100 and "," not in raw:  # a year
        new = n + rng.choice([-1, 1]) * rng.randint(1, 30)
    elif n < 10:
        new = rng.choice([k for k in range(1, 13) if k != n])
    else:
        new = max(1, int(n * rng.choice([0.3, 0.5, 2, 3, 1.5, 0.7])) + rng.randint(-3, 3))
        if new == n:
            new = n + 7
    out = f"{new:,}" if "," in raw else str(new)
    return s[: m.start()] + out + s[m.end() :]


def swap_name(s: str, page_names: list[str], rng: random.Random) -> str | None:
    toks = tokens(s)
    here = [t for t in toks[1:] if t[0].isupper() and t.lower() not in STOPWORDS and len(t) > 2]
    others = [n for n in page_names if n not in toks and len(n) > 2]
    if not here or not others:
        return None
    old, new = rng.choice(here), rng.choice(others)
    return re.sub(rf"\b{re.escape(old)}\b", new, s, count=1)


def flip_negation(s: str, rng: random.Random) -> str | None:
    if _NOT.search(s):
        return _NOT.sub(lambda m: m.group(1), s, count=1)
    m = _AUX.search(s)
    if not m:
        return None
    return s[: m.end()] + " not" + s[m.end() :]


def opposite_word(s: str, rng: random.Random) -> str | None:
    hits = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in OPPOSITES]
    if not hits:
        return None
    m = rng.choice(hits)
    return s[: m.start()] + OPPOSITES[m.group(0)] + s[m.end() :]


def refute(s: str, page_names: list[str], rng: random.Random) -> str | None:
    edits = [
        lambda: change_number(s, rng),
        lambda: swap_name(s, page_names, rng),
        lambda: flip_negation(s, rng),
        lambda: opposite_word(s, rng),
    ]
    rng.shuffle(edits)
    for edit in edits:
        out = edit()
        if out and out != s:
            return out
    return None


def trim(s: str, rng: random.Random) -> str:
    """The sentence or a shorter true part of it: a parenthesis or a trailing clause dropped."""
    choices = [s]
    no_paren = re.sub(r"\s*\([^)]*\)", "", s)
    if no_paren != s:
        choices.append(no_paren)
    parts = s.split(", ")
    if len(parts) > 1 and len(parts[0].split()) >= 5:
        choices.append(parts[0].rstrip(".") + ".")
    return rng.choice(choices)


def pairs_from_page(
    sentences: list[str], rng: random.Random, *, per_sentence: int = 1, context: int = 2
) -> list[tuple[str, str, str]]:
    """(claim, evidence, label) triples from the sentences of one page."""
    sentences = [s for s in dict.fromkeys(sentences) if 6 <= len(s.split()) <= 60]
    if len(sentences) < 2:
        return []
    page_names = sorted({t for s in sentences for t in tokens(s)[1:] if t[0].isupper()})
    out: list[tuple[str, str, str]] = []
    for s in rng.sample(sentences, min(len(sentences), per_sentence * 4)):
        others = [o for o in sentences if o != s]
        evidence = s
        if context and rng.random() < 0.5:
            extra = rng.sample(others, min(len(others), rng.randint(1, context)))
            block = extra + [s]
            rng.shuffle(block)
            evidence = " ".join(block)
        kind = rng.random()
        if kind < 0.34:
            out.append((trim(s, rng), evidence, "supported"))
        elif kind < 0.75:
            bad = refute(s, page_names, rng)
            if bad:
                out.append((bad, evidence, "refuted"))
        else:
            other = rng.choice(others)
            if other not in evidence:
                out.append((trim(other, rng), evidence, "nei"))
    return out


_LOWER_FIRST = {
    "the",
    "he",
    "she",
    "it",
    "they",
    "his",
    "her",
    "its",
    "their",
    "in",
    "on",
    "at",
    "a",
    "an",
    "this",
    "these",
    "there",
    "after",
    "during",
    "since",
    "from",
    "by",
    "as",
}


def joined_claim(first: str, second: str, *more: str) -> str:
    """Statements as one compound claim ("A, and b." / "A, b, and c."), as multi-hop claims read."""
    parts = [first, second, *more]
    for i in range(1, len(parts)):
        head, _, rest = parts[i].partition(" ")
        if head.lower() in _LOWER_FIRST:
            parts[i] = head.lower() + (" " + rest if rest else "")
    inner = [x.rstrip(" .;") for x in parts[:-1]]
    return ", ".join(inner) + ", and " + parts[-1]


#: of the refuted two-part and joined claims, the share whose other part (one of them) the evidence does not settle
REFUTED_BESIDE_UNSETTLED = 0.4


def _whole(s: str) -> str:
    """A sentence kept whole as a claim's part, a parenthesis dropped (a trailing clause cut could leave a fragment)."""
    return re.sub(r"\s*\([^)]*\)", "", s)


def compound_pairs(sentences: list[str], rng: random.Random, *, count: int = 4) -> list[tuple[str, str, str]]:
    """(claim, evidence, label) triples whose claim joins two statements and whose evidence is several sentences
    (as FEVEROUS- and HoVer-style claims are checked): supported when both parts are in the evidence, refuted
    when one part has a fact changed (the other in the evidence, or, in a share REFUTED_BESIDE_UNSETTLED of them, a
    sentence the evidence does not hold: a claim with one false part is false whatever its other parts say), not
    enough information when one part is another sentence of the page that the evidence does not hold. The whole
    claim must be covered, not just most of its words."""
    sentences = [s for s in dict.fromkeys(sentences) if 6 <= len(s.split()) <= 40]
    if len(sentences) < 3:
        return []
    page_names = sorted({t for s in sentences for t in tokens(s)[1:] if t[0].isupper()})
    out: list[tuple[str, str, str]] = []
    for _ in range(count):
        a, b, c = rng.sample(sentences, 3)
        block = [a, b] + ([c] if rng.random() < 0.3 else [])
        rng.shuffle(block)
        evidence = " ".join(block)
        first, second = _whole(a), _whole(b)
        kind = rng.random()
        if kind < 0.4:
            label = "supported"
        elif kind < 0.8:
            bad = refute(second, page_names, rng)
            if not bad:
                continue
            second, label = bad, "refuted"
            if c not in block and rng.random() < REFUTED_BESIDE_UNSETTLED:
                first = _whole(c)  # the other part unsettled: the changed fact still refutes the claim
        else:
            if c in block:
                continue
            second, label = _whole(c), "nei"
        if rng.random() < 0.5:
            first, second = second, first
        out.append((joined_claim(first, second), evidence, label))
    return out


JOINED_MAX_WORDS = 95  # claim and evidence together, so that a joined pair fits in 128 word pieces, nothing cut


def joined_pairs(
    items: list[tuple[str, str, str]], rng: random.Random, *, count: int, partial: bool = False
) -> list[tuple[str, str, str]]:
    """(claim, evidence, label) triples whose claim joins two or three real claims (human-written, each with its
    own evidence sentence: VitaminC, FEVER, FM2 pairs of one part) and whose evidence is their evidence sentences
    together, shuffled, sometimes with an unrelated sentence among them, as multi-hop claims are checked against
    several gold sentences: supported when every part is supported, refuted when one part is refuted (the others
    supported, or, in a share REFUTED_BESIDE_UNSETTLED of them, one unsettled by its evidence: many of FEVEROUS's
    false claims are of this kind, one fact changed among parts their evidence does not mention), not enough
    information when one part's evidence does not settle it and none is refuted. Unlike `compound_pairs`, the
    parts are paraphrases of their evidence, not copies, so the whole claim must be read, not matched.

    With `partial`, the evidence is some parts' evidence only (one part's of two; one or two of three), as
    the pipelines read each of several gold passages alone: refuted when a refuted part's evidence is there,
    else not enough information (the rest of the claim is unsettled). Without these, a supported multi-hop
    claim read against one of its passages came out refuted, and the most decisive passage decided so."""

    def clean(text: str) -> str:
        return re.sub(r"\s+([.,;:!?'])", r"\1", " ".join(text.split())).strip()

    by_label: dict[str, list[tuple[str, str]]] = {}
    for claim, evidence, label in items:
        claim, evidence = clean(claim), clean(evidence)
        if label in ("supported", "refuted", "nei") and len(claim.split()) <= 30 and len(evidence.split()) <= 45:
            by_label.setdefault(label, []).append((claim.rstrip(" ."), evidence))
    supported = by_label.get("supported", [])
    others = [x for group in by_label.values() for x in group]
    if len(supported) < 3:
        return []
    out: list[tuple[str, str, str]] = []
    for _ in range(count * 3):  # some draws are too long or repeat a claim; stop at `count`
        if len(out) >= count:
            break
        n = 2 if rng.random() < 0.65 else 3
        kind = rng.random()
        label = "supported" if kind < 0.4 else "refuted" if kind < 0.75 else "nei"
        if label != "supported" and not by_label.get(label):
            continue
        parts = rng.sample(supported, n - (label != "supported"))
        if label != "supported":
            at = rng.randrange(n)
            parts.insert(at, rng.choice(by_label[label]))
            if label == "refuted" and by_label.get("nei") and rng.random() < REFUTED_BESIDE_UNSETTLED:
                parts[1 if at == 0 else 0] = rng.choice(by_label["nei"])  # a supported part unsettled: still refuted
        if len({c.lower() for c, _ in parts}) < n or len({e for _, e in parts}) < n:
            continue
        block = [e for _, e in parts]
        if partial:
            kept = sorted(rng.sample(range(n), rng.randint(1, n - 1)))
            block = [block[i] for i in kept]
            label = "refuted" if label == "refuted" and at in kept else "nei"
        if rng.random() < 0.3:
            extra = rng.choice(others)[1]
            if extra not in [e for _, e in parts]:  # (a dropped part's own evidence would settle it)
                block.append(extra)
        rng.shuffle(block)
        claim, evidence = joined_claim(*[c for c, _ in parts]) + ".", " ".join(dict.fromkeys(block))
        if len(claim.split()) + len(evidence.split()) <= JOINED_MAX_WORDS:
            out.append((claim, evidence, label))
    return out


#: a run of capitalised words (a name), joined by spaces; a word may carry an accent, a hyphen or an apostrophe
_NAME = re.compile(r"[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*")


def subject(claim: str) -> str | None:
    """The name the claim opens with (a run of capitalised words, a leading "The" dropped), taken as what it is
    about; None when it opens otherwise ("As of 27 March, ...": its first name need not be its subject)."""
    m = _NAME.match(claim.strip())
    if not m:
        return None
    words_ = m.group(0).split()
    while words_ and words_[0].lower() in STOPWORDS:  # "The Eiffel Tower" -> "Eiffel Tower"
        words_ = words_[1:]
    return " ".join(words_) or None


def subject_keys(name: str) -> set[str]:
    """The words of a subject's name that identify it ("Eiffel", "Tower"; not "The" or "Of")."""
    return {w for w in name.split() if len(w) > 3 and w.lower() not in STOPWORDS}


def subject_named(text: str, keys: set[str]) -> list[re.Match]:
    """The names in `text` sharing a word with a subject's `keys`."""
    return [m for m in _NAME.finditer(text) if keys & set(m.group(0).split())]


def other_subject(claim: str, evidence: str, replacement: str) -> str | None:
    """`evidence` about `replacement` instead of the claim's subject: every name in it sharing a word with the
    subject replaced by `replacement`; None when the evidence does not name the subject, or still would."""
    name = subject(claim)
    if not name:
        return None
    keys = subject_keys(name)
    if not keys or keys & set(replacement.split()):
        return None
    hits = subject_named(evidence, keys)
    if not hits:
        return None
    out = evidence
    for m in reversed(hits):
        out = out[: m.start()] + replacement + out[m.end() :]
    if any(re.search(rf"\b{re.escape(k)}\b", out) for k in keys):
        return None
    return out
