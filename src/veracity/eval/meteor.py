"""METEOR between two sentences, as AVeriTeC's official scorer computes it, offline.

The shared task's scorer calls NLTK: `single_meteor_score(word_tokenize(reference), word_tokenize(candidate))`
with NLTK's defaults (lower-cased, exact then Porter-stem then WordNet-synonym matching, alpha 0.9, beta 3,
gamma 0.5). So does this module, with NLTK's own code; what it cannot download at run time it finds on disk:

- WordNet (the synonym stage): NLTK's `wordnet` corpus when an nltk_data folder holds it, else Debian's
  WordNet 3.0 database (`apt-get install wordnet-base`: /usr/share/wordnet, the same WordNet 3.0 that NLTK's
  corpus is), read with NLTK's reader. With neither, the synonym stage matches nothing: exact and stem
  matches only, so a pair that differs by a synonym scores lower than the official scorer gives it.
  `wordnet_source()` says which one is in use; the evaluation report prints it beside the scores.
- Punkt's English sentence model (word_tokenize splits sentences first, so a sentence-final period becomes a
  token of its own): NLTK's `punkt_tab` when an nltk_data folder holds it, else NLTK's Punkt tokenizer with
  no trained parameters (it still splits at sentence ends; it knows no abbreviations, so "Mr. Smith" may be
  split where the trained model would not). Words are then split by NLTK's word tokenizer, as word_tokenize does.
"""

from __future__ import annotations

import io
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

DEBIAN_WORDNET = Path("/usr/share/wordnet")

# WordNet 3.0's lexicographer files, in the order of their numbers (the `lexnames` file of the WordNet
# database, documented in lexnames(5WN)); Debian's wordnet-base leaves the file out, NLTK's reader needs it.
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

_lock = threading.Lock()  # NLTK's WordNet reader caches synsets as it reads: one reader at a time


class NoWordNet:
    """A WordNet with no synsets: METEOR's synonym stage then matches nothing."""

    def synsets(self, word: str, *args: Any, **kwargs: Any) -> list:
        return []


def _lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))


def _debian_reader(root: Path):
    """NLTK's WordNet reader over a WordNet 3.0 database folder that lacks the `lexnames` file."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class DebianWordNet(WordNetCorpusReader):
        def open(self, fileid):  # type: ignore[override]
            if fileid == "lexnames" and not (root / "lexnames").is_file():
                return io.StringIO(_lexnames_text())
            return super().open(fileid)

        def map_wn(self, version="wordnet"):  # it is WordNet 3.0 itself: nothing to map
            return None

    if str(root) not in nltk.data.path:  # NLTK reads corpora only under its data path
        nltk.data.path.append(str(root))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not used here
        return DebianWordNet(str(root), None)


@lru_cache(maxsize=1)
def _wordnet() -> tuple[Any, str]:
    """(the WordNet METEOR uses, where it came from)."""
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        return wordnet, "NLTK's wordnet corpus (WordNet 3.0)"
    except LookupError:
        pass
    if (DEBIAN_WORDNET / "data.noun").is_file():
        return _debian_reader(DEBIAN_WORDNET), f"WordNet 3.0 from {DEBIAN_WORDNET} (Debian's wordnet-base)"
    return NoWordNet(), "no WordNet found: exact and stem matches only, no synonym stage"


def wordnet_source() -> str:
    """Which WordNet the synonym stage uses, or that there is none (then scores can be lower than official)."""
    return _wordnet()[1]


def has_wordnet() -> bool:
    return not isinstance(_wordnet()[0], NoWordNet)


@lru_cache(maxsize=1)
def _sentence_splitter():
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        from nltk.tokenize import PunktTokenizer

        return PunktTokenizer("english").tokenize
    except LookupError:
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        return PunktSentenceTokenizer().tokenize


@lru_cache(maxsize=1)
def _word_splitter():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer().tokenize


def tokenize(text: str) -> list[str]:
    """NLTK's word_tokenize: sentences first, then the words of each."""
    words = _word_splitter()
    return [w for sentence in _sentence_splitter()(text) for w in words(sentence)]


def meteor(candidate: str, reference: str) -> float:
    """METEOR of `candidate` against `reference` (the official scorer's `pairwise_meteor(candidate, reference)`)."""
    from nltk.translate.meteor_score import single_meteor_score

    wordnet, _ = _wordnet()
    with _lock:
        return float(single_meteor_score(tokenize(reference), tokenize(candidate), wordnet=wordnet))
