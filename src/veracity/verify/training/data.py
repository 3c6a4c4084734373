"""Training and held-apart data for the verifier, read from `../shared/training` (see its PROVENANCE files).

FM2 is split by Wikipedia page (a stable hash of the page name), so no page is on two sides:
65% train, 10% calibration (temperature and stacking), 25% held out for measuring. CAD-SNLI keeps its own
train / dev / test. The ten JSONL sources are split by sources.py (grouped by shared claim, premise or item;
the FEVER-derived folders together) and capped per source, so that no single style dominates the mix.
The benchmark sets in `../shared/benchmarks` are never read here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError
from ..result import LABELS
from ..text import content_words, numbers, stem
from .sources import CALIBRATION_CAP, HELDOUT_CAP, SOURCES, capped, read_sources
from .synthetic import (
    compound_pairs,
    joined_pairs,
    other_subject,
    pairs_from_page,
    subject,
    subject_keys,
    subject_named,
)

_FM2 = {"SUPPORTS": "supported", "REFUTES": "refuted"}
_NLI = {"entailment": "supported", "contradiction": "refuted", "neutral": "nei"}


@dataclass(frozen=True)
class Pair:
    claim: str
    evidence: str
    label: str
    source: str


@dataclass(frozen=True)
class FM2Claim:
    claim: str
    label: str
    page: str
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]


def default_training_dir() -> Path:
    return Path(__file__).resolve().parents[4].parent / "shared" / "training"


def fm2_part(page: str) -> str:
    bucket = int(hashlib.sha1(page.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "test" if bucket < 25 else "calibration" if bucket < 35 else "train"


def read_fm2(root: Path) -> list[FM2Claim]:
    out = []
    for name in ("dev.jsonl", "test.jsonl"):
        path = root / "fm2" / name
        if not path.exists():
            raise UserError(f"training data not found: {path} (see ../shared/training/README.md)")
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            out.append(
                FM2Claim(
                    r["text"].strip(),
                    _FM2[r["label"]],
                    r["wikipedia_page"],
                    tuple(g["text"] for g in r["gold_evidence"]),
                    tuple(e["text"] for e in r["retrieved_evidence"]),
                )
            )
    return out


def read_cad(root: Path, split: str) -> list[Pair]:
    path = root / "cad_snli" / f"{split}.tsv"
    if not path.exists():
        raise UserError(f"training data not found: {path}")
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Pair(r["sentence2"], r["sentence1"], _NLI[r["gold_label"]], "cad_snli")
        for r in rows
        if r.get("gold_label") in _NLI
    ]


def fm2_pairs(claims: list[FM2Claim], rng: random.Random, *, nei: bool = True, distractors: bool = True) -> list[Pair]:
    """Each claim against its gold evidence; with distractors mixed in; and against non-gold sentences (nei)."""
    out = []
    for c in claims:
        gold = " ".join(c.gold)
        out.append(Pair(c.claim, gold, c.label, "fm2"))
        others = [s for s in c.retrieved if s not in c.gold]
        if distractors and others:
            block = list(c.gold) + rng.sample(others, min(len(others), rng.randint(1, 3)))
            rng.shuffle(block)
            out.append(Pair(c.claim, " ".join(block), c.label, "fm2+distractors"))
        if nei and len(others) >= 2:
            out.append(Pair(c.claim, " ".join(rng.sample(others, 2)), "nei", "fm2-nei"))
    return out


def _pages(claims: list[FM2Claim]) -> dict[str, list[str]]:
    pages: dict[str, list[str]] = {}
    for c in claims:
        pages.setdefault(c.page, []).extend(c.gold + c.retrieved)
    return pages


def synthetic_pairs(claims: list[FM2Claim], rng: random.Random, *, per_page: int = 28) -> list[Pair]:
    pages, out = _pages(claims), []
    for page in sorted(pages):
        triples = pairs_from_page(pages[page], rng, per_sentence=max(1, per_page // 4))
        out.extend(Pair(cl, ev, lab, "synthetic") for cl, ev, lab in triples[:per_page])
    return out


def compound_claim_pairs(claims: list[FM2Claim], rng: random.Random, *, per_page: int = 12) -> list[Pair]:
    """Two-part claims against several sentences of the same pages (synthetic.compound_pairs)."""
    pages = _pages(claims)
    return [
        Pair(cl, ev, lab, "compound")
        for page in sorted(pages)
        for cl, ev, lab in compound_pairs(pages[page], rng, count=per_page)
    ]


@dataclass
class TrainingData:
    train: list[Pair]
    calibration: list[Pair]
    heldout_fm2: list[Pair]  # FM2 claims of held-out pages against their gold evidence (2 labels)
    cad_test: list[Pair]
    heldout_synthetic: list[Pair]  # synthetic edits of held-out pages' sentences (3 labels)
    heldout_retrieved: list[tuple[str, list[str], str]]  # held-out claims, their page's retrieved sentences, label
    heldout_sources: dict[str, list[Pair]]  # the held-apart part of each JSONL source (sources.py)
    calibration_retrieved: list[tuple[str, list[str], str]] = field(default_factory=list)  # as heldout_retrieved
    heldout_compound: list[Pair] = field(default_factory=list)  # two-part claims of held-out pages (3 labels)
    heldout_joined: list[Pair] = field(default_factory=list)  # held-apart real claims joined in twos and threes
    heldout_offtopic: list[Pair] = field(default_factory=list)  # held-apart pairs, and their claims off-topic (nei)
    #: held-apart claims against their evidence among unrelated passages, and against unrelated passages only
    heldout_offtopic_passages: list[tuple[str, list[str], str]] = field(default_factory=list)
    heldout_other_subject: list[Pair] = field(default_factory=list)  # held-apart pairs, and about another subject
    heldout_partial: list[Pair] = field(default_factory=list)  # held-apart joined claims against some parts' evidence
    heldout_same_subject: list[Pair] = field(default_factory=list)  # held-apart pairs, and on another point (nei)


SYNTHETIC_CAP, CAD_CAP, COMPOUND_CAP = 4000, 4000, 4000  # training pairs from FM2 page edits, CAD-SNLI, two-part claims
JOINED_CAP = 8000  # training pairs whose claim joins two or three real claims (synthetic.joined_pairs)
#: the sources whose real claims are joined: Wikipedia claims, each against a sentence or two
JOINED_SOURCES = ("vitaminc_real", "vitaminc_synthetic", "fever_symmetric")


def joined_claim_pairs(
    fm2: list[FM2Claim], pairs: list, part: str, count: int, seed: int, *, partial: bool = False
) -> list[Pair]:
    """Real claims of one part (FM2 claims with their gold evidence, and the JOINED_SOURCES' pairs) joined in twos
    and threes against their evidence sentences together (synthetic.joined_pairs), or with `partial` against some
    parts' evidence only (source "partial"). Only one part's claims are joined, so nothing crosses from training
    to the held-apart side."""
    items = [(c.claim, " ".join(c.gold), c.label) for c in fm2] + [
        (p.claim, p.evidence, p.label) for p in pairs if p.part == part and p.source in JOINED_SOURCES
    ]
    triples = joined_pairs(items, random.Random(seed), count=count, partial=partial)
    return [Pair(cl, ev, lab, "partial" if partial else "joined") for cl, ev, lab in triples]


#: training pairs whose joined claim is read against some of its parts' evidence only (synthetic.joined_pairs'
#: `partial`): how each of a multi-hop claim's gold passages is read alone
PARTIAL_CAP = 6000


OFFTOPIC_CAP = 4000  # training pairs whose evidence is another source's, unrelated to the claim (nei)
OFFTOPIC_WORDS = 80  # at most this many words of off-topic evidence (what a retriever returns: a passage)


def _passages(pairs: list) -> list:
    """The pairs whose evidence is passage-sized (at most OFFTOPIC_WORDS words), to stand as unrelated evidence."""
    return [p for p in pairs if len(p.evidence.split()) <= OFFTOPIC_WORDS]


def _unrelated(p, pool: list, rng: random.Random):
    """A pair of `pool` from another source than `p` (so on another subject), or None after a few tries."""
    for _ in range(8):
        other = rng.choice(pool)
        if other.source != p.source and other.claim != p.claim:
            return other
    return None


def offtopic_pairs(claims: list, evidence: list, rng: random.Random, count: int) -> list[Pair]:
    """Up to `count` claims of `claims` each against the evidence of a pair of another source in `evidence`: what
    a retriever returns when nothing on the claim was found, which does not settle it (nei). The verifier trained
    before these read such held-apart passages as refuting 35% of the time (an unrelated bridge "refuted" that the
    Eiffel Tower is in Paris): SNLI reads an unrelated scene as a contradiction, and nothing here said otherwise."""
    pool = _passages(evidence)
    out: list[Pair] = []
    for p in rng.sample(claims, min(count, len(claims))):
        other = _unrelated(p, pool, rng)
        if other is not None:
            out.append(Pair(p.claim, other.evidence, "nei", "offtopic"))
    return out


OTHER_SUBJECT_CAP = 4000  # training pairs whose evidence is about another subject (nei)
#: the sources whose evidence names the claim's subject often enough: Wikipedia claims and sentences
SUBJECT_SOURCES = ("vitaminc_real", "vitaminc_synthetic", "fever_symmetric", "fm2")


def other_subject_pairs(pairs: list, rng: random.Random, count: int) -> list[Pair]:
    """Up to `count` pairs of the SUBJECT_SOURCES with their evidence about someone else (synthetic.other_subject:
    the subject's name replaced by another claim's subject), nei. The same sentence about someone else is what a
    search returns about a namesake or a neighbour; the verifier trained before these read sentences by their
    shape, not their subject ("Marie Curie was born in Warsaw" against "Albert Einstein was born in Ulm": refuted
    0.92), and such held-apart pairs as nei only 7% of the time."""
    mine = [p for p in pairs if p.source in SUBJECT_SOURCES and p.label in ("supported", "refuted")]
    names = sorted({n for n in (subject(p.claim) for p in mine) if n and len(n.split()) > 1})  # "Walt Disney"
    out: list[Pair] = []
    for p in rng.sample(mine, len(mine)):
        if len(out) >= count or not names:
            break
        for _ in range(3):  # a drawn name may be the claim's own
            changed = other_subject(p.claim, p.evidence, rng.choice(names))
            if changed:
                out.append(Pair(p.claim, changed, "nei", "other-subject"))
                break
    return out


_NOT_SUBJECTS = frozenset(
    "January February March April June July August September October November December Monday "
    "Tuesday Wednesday Thursday Friday Saturday Sunday Many Several Every Following According "
    "Despite Although Since Because However".split()
)
#: what the subject is ("... is a 2012 film", "was an EP"): two such statements may refute each other unworded
_DEFINES = re.compile(r"\b(is|was|are|were)( not)? (a|an|the|one)\b")


def _said(text: str) -> set[str]:
    """What a text says, crudely: its content words and numbers, each word stemmed and cut to five letters
    ("American" and "America", "worked" and "work" alike), so that a point two texts share is seen in another form."""
    return {stem(w)[:5] for w in content_words(text)} | numbers(text)


def same_subject_pairs(pairs: list, rng: random.Random, count: int) -> list[Pair]:
    """Up to `count` claims of the SUBJECT_SOURCES each against the evidence of another claim about the same subject
    (the name both open with) that names the subject and shares nothing else with the claim (no content word, no
    number): nei. A sentence about the subject on another point is what a search returns first, and it does not
    settle the claim; the verifier trained before these read such sentences as refuting ("The Orrin Bridge is a
    stone bridge in Tallinn, Estonia." against "The Orrin Bridge was built in 1871.": refuted 0.89), so a
    retrieved sentence on another point could decide a verdict. Only evidence that supports its own claim is used
    (not a sentence edited to refute one), never the claim's own (of any of its pairs). Some pairs made so are
    settled after all by what the words do not share ("nicknamed Pop" against "referred to as Pappi"): the filters
    below keep them few, not none."""
    mine = [p for p in pairs if p.source in SUBJECT_SOURCES and p.label in LABELS]
    own: dict[str, set[str]] = {}
    name_of: dict[str, str] = {}
    by_subject: dict[str, list] = {}
    for p in mine:
        own.setdefault(p.claim, set()).add(p.evidence)
        name = name_of.setdefault(p.claim, subject(p.claim) or "")
        if name:
            by_subject.setdefault(name, []).append(p)
    out: list[Pair] = []
    for p in rng.sample(mine, len(mine)):
        if len(out) >= count:
            break
        name = name_of[p.claim]
        keys = subject_keys(name)
        # "Before April 21, ...", "Many of the schools ...": no subject; "X is a singer": settled by much unworded
        if not keys or keys & _NOT_SUBJECTS or len(by_subject[name]) < 2 or _DEFINES.search(p.claim):
            continue
        point = _said(p.claim) - _said(name)
        if not point:
            continue
        head = {name.split()[-1]}  # the surname, "Tower": "City of David" does not name "City of Angels"
        for other in rng.sample(by_subject[name], min(len(by_subject[name]), 4)):
            ev = other.evidence
            if (
                other.label == "supported"
                and other.claim != p.claim
                and ev not in own[p.claim]
                and subject_named(ev, head)
                and not point & _said(ev)
                and len(ev.split()) <= OFFTOPIC_WORDS
                and not (numbers(p.claim) and numbers(ev))
            ):  # a film "of 2012" against "shown in 2010"
                out.append(Pair(p.claim, ev, "nei", "same-subject"))
                break
    return out


def offtopic_passages(
    pairs: list, evidence: list, rng: random.Random, distractors: int = 2
) -> list[tuple[str, list[str], str]]:
    """Each pair's claim against its own evidence among `distractors` unrelated passages (its label), and against
    unrelated passages only (nei): what a retriever over a mixed collection returns, read as the pipelines read."""
    pool = _passages(evidence)
    out = []
    for p in pairs:
        others = [o.evidence for o in (_unrelated(p, pool, rng) for _ in range(distractors + 1)) if o is not None]
        mixed = others[:distractors] + [p.evidence]
        rng.shuffle(mixed)
        out += [(p.claim, mixed, p.label), (p.claim, others, "nei")]
    return out


def build(root: Path, seed: int = 13, *, sources: tuple[str, ...] | None = None, same_subject: int = 0) -> TrainingData:
    """The training mix, the calibration part and the held-apart sets. `sources`: which JSONL sources of
    sources.SOURCES to read (default all; () for FM2 and CAD-SNLI alone). `same_subject`: up to this many
    training pairs of a claim against a sentence on another point about its subject (same_subject_pairs; held
    apart always)."""
    rng = random.Random(seed)
    fm2 = read_fm2(root)
    parts = {name: [c for c in fm2 if fm2_part(c.page) == name] for name in ("train", "calibration", "test")}
    train = (
        fm2_pairs(parts["train"], rng)
        + capped(read_cad(root, "train"), CAD_CAP, rng)
        + capped(synthetic_pairs(parts["train"], rng), SYNTHETIC_CAP, rng)
        + capped(compound_claim_pairs(parts["train"], random.Random(seed + 3)), COMPOUND_CAP, rng)
    )
    calibration = (
        fm2_pairs(parts["calibration"], rng, distractors=False)
        + capped(read_cad(root, "dev"), CALIBRATION_CAP, rng)
        + capped(synthetic_pairs(parts["calibration"], rng), CALIBRATION_CAP, rng)
        + capped(
            compound_claim_pairs(parts["calibration"], random.Random(seed + 3)),
            CALIBRATION_CAP,
            random.Random(seed + 3),
        )
    )
    heldout_sources: dict[str, list[Pair]] = {}
    pairs = read_sources(root, SOURCES.keys() if sources is None else sources)
    for name in dict.fromkeys(p.source for p in pairs):
        mine = [p for p in pairs if p.source == name]
        of = {
            part: [Pair(p.claim, p.evidence, p.label, name) for p in mine if p.part == part]
            for part in ("train", "calibration", "heldout")
        }
        train += capped(of["train"], SOURCES[name][3], rng)
        calibration += capped(of["calibration"], CALIBRATION_CAP, rng)
        heldout_sources[name] = capped(of["heldout"], HELDOUT_CAP, random.Random(seed + 2))
    # drawn with their own seeds after everything else, so the other sets are the same with or without them
    train += joined_claim_pairs(parts["train"], pairs, "train", JOINED_CAP, seed + 5)
    calibration += joined_claim_pairs(parts["calibration"], pairs, "calibration", CALIBRATION_CAP, seed + 6)
    by_part = {
        part: [Pair(p.claim, p.evidence, p.label, p.source) for p in pairs if p.part == part]
        for part in ("train", "calibration", "heldout")
    }
    fm2_own = {
        part: [Pair(c.claim, " ".join(c.gold), c.label, "fm2") for c in parts[fm2]]
        for part, fm2 in (("train", "train"), ("calibration", "calibration"), ("heldout", "test"))
    }
    train += offtopic_pairs(
        by_part["train"] + fm2_own["train"], by_part["train"] + fm2_own["train"], random.Random(seed + 8), OFFTOPIC_CAP
    )
    calibration += offtopic_pairs(
        by_part["calibration"] + fm2_own["calibration"],
        by_part["calibration"] + fm2_own["calibration"],
        random.Random(seed + 9),
        CALIBRATION_CAP,
    )
    train += other_subject_pairs(by_part["train"] + fm2_own["train"], random.Random(seed + 13), OTHER_SUBJECT_CAP)
    calibration += other_subject_pairs(
        by_part["calibration"] + fm2_own["calibration"], random.Random(seed + 14), CALIBRATION_CAP
    )
    swapped = other_subject_pairs(by_part["heldout"] + fm2_own["heldout"], random.Random(seed + 15), HELDOUT_CAP // 2)
    # beside each changed copy, a held-apart pair of the same claim (the last one read, when a claim has several)
    originals = {p.claim: p for p in by_part["heldout"] + fm2_own["heldout"] if p.source in SUBJECT_SOURCES}
    other_subject_heldout = [originals[p.claim] for p in swapped if p.claim in originals] + swapped
    # held apart: pairs of three-label sets beside their own claims against an unrelated passage
    own = [p for p in by_part["heldout"] + fm2_own["heldout"] if p.label in LABELS]
    own = random.Random(seed + 10).sample(own, min(HELDOUT_CAP // 2, len(own)))
    offtopic_heldout = own + offtopic_pairs(
        own, by_part["heldout"] + fm2_own["heldout"], random.Random(seed + 11), len(own)
    )
    # claims against a sentence on another point about their subject, drawn last with their own seeds (as below);
    # trained on only when asked (`same_subject` pairs): the stage trained with them was not shipped (README)
    if same_subject:
        train += same_subject_pairs(by_part["train"] + fm2_own["train"], random.Random(seed + 19), same_subject)
    same = same_subject_pairs(by_part["heldout"] + fm2_own["heldout"], random.Random(seed + 20), HELDOUT_CAP // 2)
    same_subject_heldout = [originals[p.claim] for p in same if p.claim in originals] + same
    # joined claims against some of their parts' evidence, drawn last with their own seeds (the sets above unchanged)
    train += joined_claim_pairs(parts["train"], pairs, "train", PARTIAL_CAP, seed + 16, partial=True)
    calibration += joined_claim_pairs(
        parts["calibration"], pairs, "calibration", CALIBRATION_CAP, seed + 17, partial=True
    )
    rng.shuffle(train)
    heldout = [Pair(c.claim, " ".join(c.gold), c.label, "fm2-heldout") for c in parts["test"]]
    synthetic_test = synthetic_pairs(parts["test"], random.Random(seed + 1))
    retrieved = [(c.claim, list(c.retrieved), c.label) for c in parts["test"]]
    return TrainingData(
        train,
        calibration,
        heldout,
        read_cad(root, "test"),
        synthetic_test,
        retrieved,
        heldout_sources,
        [(c.claim, list(c.retrieved), c.label) for c in parts["calibration"]],
        capped(compound_claim_pairs(parts["test"], random.Random(seed + 4)), HELDOUT_CAP, random.Random(seed + 4)),
        joined_claim_pairs(parts["test"], pairs, "heldout", HELDOUT_CAP, seed + 7),
        offtopic_heldout,
        offtopic_passages(own[: HELDOUT_CAP // 4], by_part["heldout"] + fm2_own["heldout"], random.Random(seed + 12)),
        other_subject_heldout,
        joined_claim_pairs(parts["test"], pairs, "heldout", HELDOUT_CAP, seed + 18, partial=True),
        same_subject_heldout,
    )
