"""Documents and passages: loading a corpus from disk and chunking it into passages.

A corpus is a JSONL file, a JSON list, a single text/Markdown/HTML/PDF file, or a folder
(searched recursively) of such files. Each document is split into passages of at most
`max_words` words on sentence and paragraph boundaries; passages are what gets indexed.

Limits: a corpus file read whole (JSON, text, Markdown, HTML, PDF) and each line of a JSONL file
may hold at most `MAX_CORPUS_FILE_BYTES` (256 MB); a JSONL file itself may be of any length (it is
read line by line). Bytes that are not UTF-8 are replaced with U+FFFD and a warning names the file
and how many were replaced.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veracity.errors import UserError
from veracity.reading import human_size, read_limited
from veracity.retrieval.file_text import html_title_and_text, plain_title_and_text

log = logging.getLogger(__name__)
# pypdf logs what it finds wrong in a damaged file ("EOF marker not found") before it raises; the raise is said once,
# in veracity's words ("skipping FILE: ..."), so its warnings are not printed as bare lines above it
logging.getLogger("pypdf").setLevel(logging.ERROR)

TEXT_SUFFIXES = (".txt", ".md")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
FILE_SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
TEXT_FIELDS = ("text", "contents", "content")  # first one present wins
RECORD_FIELDS = ("id", "title", "url", "date", *TEXT_FIELDS)
MAX_CORPUS_FILE_BYTES = 256_000_000  # per file read whole, and per JSONL line
_BOM = b"\xef\xbb\xbf"
_REPLACEMENT = "\ufffd".encode()


@dataclass
class Document:
    """One source document as loaded, before chunking."""

    id: str
    title: str
    text: str
    url: str | None = None
    date: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Passage:
    """A chunk of a document: the unit that is indexed and retrieved.

    Its text is the document's text at `start:end`, exactly; `doc_sha256` is the SHA-256 of the whole document
    text (`veracity recheck` finds the passage again by them). Indexes built before these were kept lack them.
    """

    id: str  # "<doc_id>#<n>"
    doc_id: str
    title: str
    text: str
    url: str | None = None
    date: str | None = None
    start: int | None = None  # the passage's character offsets in its document's text
    end: int | None = None
    doc_sha256: str | None = None

    @property
    def search_text(self) -> str:
        """The text that retrievers index: the title gives context to every chunk."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_dict(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "doc_id": self.doc_id,
            "title": self.title,
            "text": self.text,
            "url": self.url,
            "date": self.date,
        }
        if self.doc_sha256 is not None:
            d.update(start=self.start, end=self.end, doc_sha256=self.doc_sha256)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Passage:
        """A passage from its stored form; TypeError/KeyError when a field is missing or of the wrong type."""
        for name in ("id", "doc_id", "text"):
            if not isinstance(d[name], str):
                raise TypeError(f"passage field {name!r} must be a string, not {type(d[name]).__name__}")
        for name in ("title", "url", "date", "doc_sha256"):
            if d.get(name) is not None and not isinstance(d[name], str):
                raise TypeError(f"passage field {name!r} must be a string, not {type(d[name]).__name__}")
        for name in ("start", "end"):
            if d.get(name) is not None and (not isinstance(d[name], int) or isinstance(d[name], bool)):
                raise TypeError(f"passage field {name!r} must be a whole number, not {type(d[name]).__name__}")
        return cls(
            id=d["id"],
            doc_id=d["doc_id"],
            title=d.get("title") or "",
            text=d["text"],
            url=d.get("url"),
            date=d.get("date"),
            start=d.get("start"),
            end=d.get("end"),
            doc_sha256=d.get("doc_sha256"),
        )


# --------------------------------------------------------------------------- loading


def load_documents(path: str | Path) -> Iterator[Document]:
    """Yield the documents stored at `path` (JSONL, JSON list, folder, or single file).

    Raises UserError for a missing path, an unsupported file type or a malformed record.
    Files inside a folder that fail to parse are skipped with a logged warning.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such file or folder: {path}")
    if path.is_dir():
        yield from _load_folder(path)
    elif path.suffix.lower() == ".jsonl":
        yield from _load_jsonl(path)
    elif path.suffix.lower() == ".json":
        yield from _load_json(path)
    elif path.suffix.lower() in FILE_SUFFIXES:
        try:
            doc = _load_file(path, doc_id=path.name)
        except (ImportError, UserError):  # an install problem, or a one-line error already (too large)
            raise
        except Exception as e:
            raise UserError(" ".join(f"cannot read {path}: {e}".split())) from e
        yield doc
    else:
        supported = ", ".join((".jsonl", ".json") + FILE_SUFFIXES)
        raise UserError(f"unsupported corpus file {path}: expected a folder or one of {supported}")


def _load_jsonl(path: Path) -> Iterator[Document]:
    replaced = surrogates = 0
    try:
        f = path.open("rb")
    except OSError as e:
        raise UserError(f"cannot read corpus file {path}: {e.strerror or e}") from None
    with f:
        for lineno in itertools.count(1):
            try:
                raw = f.readline(MAX_CORPUS_FILE_BYTES + 1)
            except OSError as e:
                raise UserError(f"cannot read corpus file {path}: {e.strerror or e}") from None
            if not raw:
                break
            if len(raw) > MAX_CORPUS_FILE_BYTES:
                raise UserError(
                    f"{path}: line {lineno} is too large: more than {human_size(MAX_CORPUS_FILE_BYTES)}, "
                    f"the limit is {human_size(MAX_CORPUS_FILE_BYTES)}"
                )
            if lineno == 1:
                raw = raw.removeprefix(_BOM)
            line, bad = _decode(raw)
            replaced += bad
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as e:
                msg = getattr(e, "msg", "nested too deeply")
                raise UserError(f"{path}: line {lineno} is not valid JSON ({msg})") from None
            doc = _record_to_document(record, default_id=str(lineno), where=f"{path}: line {lineno}")
            surrogates += _scrub(doc)
            yield doc
    _warn_replaced(path, replaced)
    _warn_surrogates(path, surrogates)


def _load_json(path: Path) -> Iterator[Document]:
    try:
        records = json.loads(_read_text(path).removeprefix("\ufeff"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise UserError(f"{path} is not valid JSON (nested too deeply)") from None
    if not isinstance(records, list):
        raise UserError(f"{path} must hold a JSON list of documents")
    surrogates = 0
    for n, record in enumerate(records, start=1):
        doc = _record_to_document(record, default_id=str(n), where=f"{path}: item {n}")
        surrogates += _scrub(doc)
        yield doc
    _warn_surrogates(path, surrogates)


def _record_to_document(record: Any, *, default_id: str, where: str) -> Document:
    """Turn one JSON object into a Document; `where` locates it in error messages."""
    if not isinstance(record, dict):
        raise UserError(f"{where} is not a JSON object")
    text_field = next((name for name in TEXT_FIELDS if name in record), None)
    if text_field is None:
        raise UserError(f"{where} has no text (expected one of the fields: {', '.join(TEXT_FIELDS)})")
    doc_id = record.get("id")
    return Document(
        id=str(doc_id) if doc_id not in (None, "") else default_id,
        title=str(record.get("title") or ""),
        text=str(record[text_field] or ""),
        url=None if record.get("url") is None else str(record["url"]),
        date=None if record.get("date") is None else str(record["date"]),
        metadata={k: v for k, v in record.items() if k not in RECORD_FIELDS},
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrub(doc: Document) -> int:
    """Replace lone surrogates (JSON escapes such as \\ud800, which no UTF-8 file can hold) in the fields that
    get indexed with U+FFFD; returns how many there were."""
    found = 0
    for name in ("id", "title", "text", "url", "date"):
        value = getattr(doc, name)
        if isinstance(value, str):
            value, n = _SURROGATE.subn("\ufffd", value)
            if n:
                setattr(doc, name, value)
                found += n
    return found


def _warn_surrogates(path: Path, found: int) -> None:
    if found:
        log.warning(
            "warning: %s: replaced %d lone surrogate escape%s (not a character) with U+FFFD",
            path,
            found,
            "" if found == 1 else "s",
        )


def _load_folder(folder: Path) -> Iterator[Document]:
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue  # hidden files and folders (.git, editor swap files)
        if not path.is_file() or path.suffix.lower() not in FILE_SUFFIXES:
            continue
        try:
            doc = _load_file(path, doc_id=relative.as_posix())
        except ImportError:  # a missing extraction library is an install problem, not a bad file
            raise
        except Exception as e:  # a corrupt file must not stop a whole corpus
            log.warning("skipping %s: %s", path, e)
            continue
        if not doc.text.strip():
            log.warning("skipping %s: no text found", path)
            continue
        yield doc


def _fs_text(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (Python keeps them as lone surrogates, which no UTF-8 file can
    hold) shown as U+FFFD ("caf\udce9.txt" -> "caf\ufffd.txt")."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _load_file(path: Path, *, doc_id: str) -> Document:
    doc_id = _fs_text(doc_id)
    suffix = path.suffix.lower()
    if suffix in HTML_SUFFIXES:
        title, text = html_title_and_text(_read_text(path))
    elif suffix in PDF_SUFFIXES:
        title, text = _pdf_title_and_text(path)
    else:
        title, text = plain_title_and_text(_read_text(path), suffix)
    name = re.sub(r"[_-]+", " ", _fs_text(path.stem)).strip() or _fs_text(path.stem)  # hedda_lund -> hedda lund
    return Document(id=doc_id, title=title or name, text=text, metadata={"path": _fs_text(str(path))})


def _read_bytes(path: Path) -> bytes:
    return read_limited(path, MAX_CORPUS_FILE_BYTES, "corpus file")


def _read_text(path: Path) -> str:
    """A corpus file as text (read up to the limit); bytes that are not UTF-8 are replaced, with a warning."""
    text, replaced = _decode(_read_bytes(path))
    _warn_replaced(path, replaced)
    return text


def _decode(data: bytes) -> tuple[str, int]:
    """UTF-8 text, and how many invalid byte sequences were replaced with U+FFFD."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        return text, text.count("\ufffd") - data.count(_REPLACEMENT)


def _warn_replaced(path: Path, replaced: int) -> None:
    if replaced:
        log.warning(
            "warning: %s is not valid UTF-8: replaced %d invalid byte sequence%s with U+FFFD",
            path,
            replaced,
            "" if replaced == 1 else "s",
        )


def _pdf_title_and_text(path: Path) -> tuple[str, str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(_read_bytes(path)))
    pages = (page.extract_text() or "" for page in reader.pages)
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    title = (reader.metadata.title if reader.metadata else None) or ""
    return str(title).strip(), text


# --------------------------------------------------------------------------- chunking

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # where str.splitlines splits
_WORD = re.compile(r"\S+")


@dataclass
class _Unit:
    """A sentence (or a window of an over-long sentence): its span in the document's text and its word count."""

    start: int
    end: int
    words: int


def chunk_document(doc: Document, max_words: int = 120, overlap_words: int = 20) -> list[Passage]:
    """Split `doc` into passages of at most `max_words` words.

    Passages end on sentence boundaries (paragraph breaks are kept); consecutive passages
    share up to `overlap_words` words of whole trailing sentences. A sentence longer than
    `max_words` is split at line ends, and what is still too long into overlapping word
    windows. A document without text gives no passages. Each passage's text is the
    document's text between its offsets, exactly as it reads there.
    """
    if max_words < 1:
        raise UserError(f"max words per passage must be at least 1, got {max_words}")
    if not 0 <= overlap_words < max_words:
        raise UserError(f"overlap must be between 0 and max words - 1 ({max_words - 1}), got {overlap_words}")
    from veracity.quotes import sha256_text

    chunks = _pack(_units(doc.text, max_words, overlap_words), max_words, overlap_words)
    digest = sha256_text(doc.text) if chunks else None
    passages = []
    for n, chunk in enumerate(chunks):
        start, end = min(u.start for u in chunk), max(u.end for u in chunk)
        passages.append(
            Passage(
                id=f"{doc.id}#{n}",
                doc_id=doc.id,
                title=doc.title,
                text=doc.text[start:end],
                url=doc.url,
                date=doc.date,
                start=start,
                end=end,
                doc_sha256=digest,
            )
        )
    return passages


def _pieces(pattern: re.Pattern[str], text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The stretches of text[start:end] between matches of `pattern`, without their outer whitespace (empty
    ones left out), as offsets in `text`."""
    pos = start
    for m in pattern.finditer(text, start, end):
        yield from _stripped(text, pos, m.start())
        pos = m.end()
    yield from _stripped(text, pos, end)


def _stripped(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        yield start, end


def _units(text: str, max_words: int, overlap_words: int) -> Iterator[_Unit]:
    for p_start, p_end in _pieces(_PARAGRAPH_BREAK, text, 0, len(text)):
        for s_start, s_end in _pieces(_SENTENCE_END, text, p_start, p_end):
            words = [(m.start(), m.end()) for m in _WORD.finditer(text, s_start, s_end)]
            # an over-long "sentence" (a list, a table, unpunctuated text) is cut at line ends first
            pieces = _pieces(_LINE_BREAK, text, s_start, s_end) if len(words) > max_words else [(s_start, s_end)]
            for start, end in pieces:
                spans = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
                for window in _windows(spans, max_words, max_words - overlap_words):
                    yield _Unit(window[0][0], window[-1][1], len(window))


def _windows(words: list, size: int, step: int) -> Iterator[list]:
    """Windows of `size` words, `step` apart, covering all of `words` (none if empty)."""
    start = 0
    while start < len(words):
        yield words[start : start + size]
        if start + size >= len(words):
            return
        start += step


def _pack(units: Iterator[_Unit], max_words: int, overlap_words: int) -> list[list[_Unit]]:
    """Greedily fill chunks with whole units, starting each new chunk with the overlap."""
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    words = 0  # in `current`
    for unit in units:
        if current and words + unit.words > max_words:
            chunks.append(current)
            current = _tail(current, overlap_words)
            words = _count(current)
            while current and words + unit.words > max_words:
                words -= current.pop(0).words
        current.append(unit)
        words += unit.words
    if current:
        chunks.append(current)
    return chunks


def _tail(units: list[_Unit], max_words: int) -> list[_Unit]:
    """The longest run of trailing units with at most `max_words` words in total."""
    start, words = len(units), 0
    while start > 0 and words + units[start - 1].words <= max_words:
        start -= 1
        words += units[start].words
    return units[start:]


def _count(units: list[_Unit]) -> int:
    return sum(u.words for u in units)
