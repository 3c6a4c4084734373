"""A local image collection: offline stand-in for image search and reverse image search.

Built from a folder of images (searched recursively) and their captions; each image may have
its caption in a sidecar file or in a manifest, later sources overriding earlier ones field by field:

    captions.jsonl      in the folder: {"image": "relative/path.jpg", "caption", "page_url", "page_title", "date"}
    NAME.txt            next to NAME.jpg (or NAME.jpg.txt): the caption
    NAME.json           next to NAME.jpg (or NAME.jpg.json): {"caption", "page_url", "page_title", "date"}

Layout of a collection folder (written atomically, like a retrieval index):

    collection.json     manifest: format, version, counts, source folder, build date
    images.jsonl        one image per line: path, sha256, perceptual and difference hashes, size, caption fields
    captions/           a veracity retrieval index (BM25) over the captions; absent when no image has one

Reverse search compares 64-bit perceptual hashes (pHash, ties broken by dHash) by Hamming distance,
which survives resizing, re-encoding and small colour changes; caption search is BM25 retrieval.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageOps

from .. import __version__
from ..errors import IndexError_, UserError
from ..image_files import ImageError, ImageFile, load_image
from ..reading import MAX_CAPTION_BYTES, MAX_DATASET_BYTES, read_limited
from ..storage import FolderFormat
from ..web.base import NotSupported, SearchHit

if TYPE_CHECKING:
    from ..retrieval.index import Index

log = logging.getLogger(__name__)

FORMAT = "veracity-image-collection"
FORMAT_VERSION = 1
MANIFEST = "collection.json"
STORED = FolderFormat("image collection", FORMAT, FORMAT_VERSION, MANIFEST, "veracity images build")
RECORDS = "images.jsonl"
CAPTIONS_DIR = "captions"
CAPTIONS_MANIFEST = "captions.jsonl"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp")
CAPTION_FIELDS = ("caption", "page_url", "page_title", "date")
MAX_DISTANCE = 10  # of 64 bits: near-duplicates are within ~6, unrelated images around 32
_HASH = re.compile(r"[0-9a-f]{16}")
_DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?([T ].*)?$")


@dataclass(frozen=True)
class CollectionImage:
    """One image of the collection, as stored in images.jsonl."""

    path: str  # relative to the collection's source folder, with "/" separators
    sha256: str
    phash: str  # 64-bit perceptual hash, 16 hex digits
    dhash: str  # 64-bit difference hash, 16 hex digits
    width: int
    height: int
    format: str
    caption: str | None = None
    page_url: str | None = None
    page_title: str | None = None
    date: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CollectionImage:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class ImageMatch:
    """A collection image found by reverse search (`distance`) or caption search (`score`)."""

    path: str  # relative to the collection's image folder
    file: Path  # where the image is on disk
    caption: str | None = None
    page_url: str | None = None
    page_title: str | None = None
    date: str | None = None
    distance: int | None = None  # pHash Hamming distance to the query image, of 64 bits (0: looks the same)
    exact: bool = False  # byte-identical to the query image
    score: float | None = None  # BM25 score of the caption

    @classmethod
    def of(cls, img: CollectionImage, root: Path, **kw: Any) -> ImageMatch:
        return cls(
            path=img.path,
            file=root / img.path,
            caption=img.caption,
            page_url=img.page_url,
            page_title=img.page_title,
            date=img.date,
            **kw,
        )


@dataclass(frozen=True)
class ImageHashes:
    phash: int
    dhash: int


def image_hashes(image: Image.Image) -> ImageHashes:
    """pHash and dHash of an image, upright (EXIF orientation applied) and flattened onto white."""
    import imagehash

    try:
        image = ImageOps.exif_transpose(image)
    except Exception:  # a malformed orientation tag: hash the pixels as stored
        pass
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba)
    image = image.convert("L")
    return ImageHashes(int(str(imagehash.phash(image)), 16), int(str(imagehash.dhash(image)), 16))


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


class ImageCollection:
    """Images with hashes and captions: reverse search by perceptual hash, caption search by BM25."""

    def __init__(
        self,
        root: Path,
        images: list[CollectionImage],
        captions: Index | None,
        manifest: dict[str, Any],
        path: Path | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.root = root  # the folder the images are in
        self.images = images
        self._captions = captions
        self._by_path = {img.path: img for img in images}
        self._hashes = [(int(img.phash, 16), int(img.dhash, 16)) for img in images]
        self.manifest = manifest
        self.path = path
        self.warnings = list(warnings or [])  # what the build skipped, and why

    def __len__(self) -> int:
        return len(self.images)

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, folder: str | Path, out: str | Path | None = None) -> ImageCollection:
        """Hash and caption every image under `folder`; save to `out` when given.

        Broken images and unreadable caption files are skipped, each with a warning in `.warnings`.
        """
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise UserError(f"no such folder of images: {folder}")
        out_dir = Path(out).expanduser().resolve() if out is not None else None
        if out_dir is not None:
            STORED.check_can_write(out_dir)
        warnings: list[str] = []
        captions = _read_captions_manifest(root, warnings)
        images: list[CollectionImage] = []
        skipped = 0
        for file in _image_files(root, skip=out_dir):
            rel = file.relative_to(root).as_posix()
            try:
                image = load_image(str(file))
            except ImageError as e:
                warnings.append(f"skipped {rel}: {e}")
                skipped += 1
                continue
            hashes = image_hashes(image.pil())
            fields_ = {**captions.pop(rel, {}), **_sidecar_captions(file, rel, warnings)}
            images.append(
                CollectionImage(
                    path=rel,
                    sha256=image.sha256,
                    phash=f"{hashes.phash:016x}",
                    dhash=f"{hashes.dhash:016x}",
                    width=image.width,
                    height=image.height,
                    format=image.format,
                    **_clean_fields(fields_, rel, warnings),
                )
            )
        for rel in captions:
            warnings.append(f"{CAPTIONS_MANIFEST}: no image {rel} in {root}")
        for w in warnings:
            log.warning("%s", w)
        if not images:
            raise UserError(f"no usable images in {root} (looked for {', '.join(IMAGE_SUFFIXES)})")
        index = _caption_index(images)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "veracity_version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "root": str(root),
            "images": len(images),
            "captioned": sum(1 for img in images if img.caption or img.page_title),
            "skipped": skipped,
            "warnings": len(warnings),
        }
        collection = cls(root, images, index, manifest, warnings=warnings)
        if out_dir is not None:
            collection.save(out_dir)
        return collection

    def save(self, out: str | Path) -> None:
        """Write the collection to `out` (atomically), replacing a collection already there."""
        out_dir = Path(out).expanduser().resolve()

        def fill(tmp: Path) -> None:
            with (tmp / RECORDS).open("w", encoding="utf-8") as f:
                for img in self.images:
                    f.write(json.dumps(asdict(img), ensure_ascii=False) + "\n")
            if self._captions is not None:
                self._captions.save(tmp / CAPTIONS_DIR)

        STORED.write(out_dir, fill, self.manifest)
        self.path = out_dir

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, path: str | Path) -> ImageCollection:
        """Open a saved collection; IndexError_ (one line) when it is missing, not a collection, or damaged."""
        from ..retrieval.index import Index

        path = Path(path).expanduser()
        if not path.exists():
            raise IndexError_(
                f"no image collection at {path}: build one with `veracity images build FOLDER --out {path}`"
            )
        if not (path / MANIFEST).is_file():
            raise IndexError_(f"{path} is not an image collection (no {MANIFEST})")
        manifest = _read_manifest(path)
        images = _read_records(path, manifest["images"])
        captions = None
        if any(img.caption or img.page_title for img in images):
            try:
                captions = Index.load(path / CAPTIONS_DIR)
            except IndexError_:
                raise _corrupt(path, f"its caption index {CAPTIONS_DIR}/ is missing or damaged") from None
        return cls(Path(manifest["root"]), images, captions, manifest, path.resolve())

    # ------------------------------------------------------------------ searching

    def reverse(self, image: ImageFile, k: int = 3, max_distance: int = MAX_DISTANCE) -> list[ImageMatch]:
        """Collection images that look like `image`: exact copies first, then by pHash (then dHash) distance."""
        if k < 1:
            raise UserError(f"the number of results must be at least 1, got {k}")
        query = image_hashes(image.pil())
        found = []
        for img, (phash, dhash) in zip(self.images, self._hashes):
            exact = img.sha256 == image.sha256
            distance = 0 if exact else hamming(phash, query.phash)
            if distance <= max_distance:
                found.append((not exact, distance, hamming(dhash, query.dhash), img.path, img))
        found.sort(key=lambda t: t[:4])
        return [self._match(img, distance=d, exact=not inexact) for inexact, d, _, _, img in found[:k]]

    def search_captions(self, query: str, k: int = 3) -> list[ImageMatch]:
        """Images whose caption or page title matches `query` (BM25), best first."""
        if not query or not query.strip():
            raise UserError("the image search query is empty")
        if k < 1:
            raise UserError(f"the number of results must be at least 1, got {k}")
        if self._captions is None:
            return []
        best: dict[str, float] = {}  # a long caption is several passages: keep each image's best
        for passage, score in self._captions.search_passages(query, k=k * 3, mode="bm25"):
            best.setdefault(passage.doc_id, score)
        ranked = [(doc_id, score) for doc_id, score in best.items() if doc_id in self._by_path][:k]
        return [self._match(self._by_path[doc_id], score=score) for doc_id, score in ranked]

    def _match(self, img: CollectionImage, **kw: Any) -> ImageMatch:
        return ImageMatch.of(img, self.root, **kw)

    def info(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, **self.manifest}


class LocalImageProvider:
    """The SearchProvider for an image collection: image search over captions and reverse image search."""

    name = "local-images"

    def __init__(self, collection: ImageCollection | str | Path, *, max_distance: int = MAX_DISTANCE) -> None:
        self.collection = collection if isinstance(collection, ImageCollection) else ImageCollection.load(collection)
        self.max_distance = max_distance

    def web(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        raise NotSupported("the local image collection has no web search")

    def images(self, query: str, k: int, *, before: str | None = None) -> list[SearchHit]:
        """Images whose captions match `query`; `before` is left to the tools' date filter."""
        return [_hit(m) for m in self.collection.search_captions(query, k)]

    def reverse(self, image: ImageFile, k: int) -> list[SearchHit]:
        return [_hit(m) for m in self.collection.reverse(image, k, self.max_distance)]


def _hit(m: ImageMatch) -> SearchHit:
    extra: dict[str, Any] = {"path": m.path}
    if m.distance is not None:
        extra.update(distance=m.distance, exact=m.exact)
    return SearchHit(
        title=m.page_title or m.caption or Path(m.path).name,
        url=m.page_url,
        snippet=m.caption or "",
        text=m.caption,
        date=m.date,
        image_url=str(m.file),
        doc_id=m.path,
        score=m.score,
        extra=extra,
    )


# --------------------------------------------------------------------------- building helpers


def _image_files(root: Path, skip: Path | None) -> Iterator[Path]:
    """Image files under `root` in a stable order, leaving out hidden folders and the output folder."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and (skip is None or here / d != skip))
        for name in sorted(filenames):
            if name.lower().endswith(IMAGE_SUFFIXES) and not name.startswith("."):
                yield here / name


def _read_captions_manifest(root: Path, warnings: list[str]) -> dict[str, dict[str, Any]]:
    path = root / CAPTIONS_MANIFEST
    if not path.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    try:
        lines = read_limited(path, MAX_DATASET_BYTES, CAPTIONS_MANIFEST).decode("utf-8-sig", "replace").splitlines()
    except UserError as e:
        warnings.append(f"{CAPTIONS_MANIFEST} is unreadable: {e}")
        return {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            rel = Path(str(record["image"]).replace("\\", "/")).as_posix()
        except (ValueError, KeyError, TypeError):
            warnings.append(f'{CAPTIONS_MANIFEST} line {lineno} is not a JSON object with an "image" field')
            continue
        out[rel.removeprefix("./")] = {k: record.get(k) for k in CAPTION_FIELDS if k in record}
    return out


def _sidecar_captions(file: Path, rel: str, warnings: list[str]) -> dict[str, Any]:
    """Fields from NAME.txt / NAME.json next to the image (NAME.jpg.txt and NAME.jpg.json also work)."""
    found: dict[str, Any] = {}
    for suffix in (".txt", ".json"):
        for candidate in (file.with_name(file.name + suffix), file.with_suffix(suffix)):
            if not candidate.is_file():
                continue
            try:
                text = read_limited(candidate, MAX_CAPTION_BYTES, "caption file").decode("utf-8-sig", "replace")
                if suffix == ".txt":
                    found["caption"] = text
                else:
                    record = json.loads(text)
                    if not isinstance(record, dict):
                        raise ValueError("not a JSON object")
                    found.update({k: record[k] for k in CAPTION_FIELDS if k in record})
            except (OSError, ValueError, UserError) as e:
                warnings.append(f"ignored {candidate.relative_to(file.parent).as_posix()} of {rel}: {e}")
            break
    return found


def _clean_fields(raw: dict[str, Any], rel: str, warnings: list[str]) -> dict[str, str | None]:
    """Caption fields as one-line strings; a date that is not ISO is dropped with a warning."""
    out: dict[str, str | None] = {}
    for key in CAPTION_FIELDS:
        value = raw.get(key)
        text = " ".join(str(value).split()) if value is not None else ""
        out[key] = text or None
    if out["date"] and not _DATE.match(out["date"]):
        warnings.append(f"ignored the date {out['date']!r} of {rel}: not an ISO date (YYYY-MM-DD)")
        out["date"] = None
    return out


def _caption_index(images: list[CollectionImage]) -> Index | None:
    from ..retrieval.documents import Document
    from ..retrieval.index import Index

    docs = [
        Document(
            id=img.path,
            title=img.page_title or "",
            text=img.caption or img.page_title or "",
            url=img.page_url,
            date=img.date,
        )
        for img in images
        if img.caption or img.page_title
    ]
    return Index.from_documents(docs, source="the image captions") if docs else None


# --------------------------------------------------------------------------- storage helpers


def _corrupt(path: Path, problem: str) -> IndexError_:
    return STORED.corrupt(path, problem)


def _read_manifest(path: Path) -> dict[str, Any]:
    manifest = STORED.read_manifest(path)
    if not isinstance(manifest.get("images"), int) or not isinstance(manifest.get("root"), str):
        raise _corrupt(path, f"{MANIFEST} lacks the image count or the image folder")
    return manifest


def _record(row: Any) -> CollectionImage:
    img = CollectionImage.from_dict(row)
    if not (_HASH.fullmatch(str(img.phash)) and _HASH.fullmatch(str(img.dhash))):
        raise ValueError("not an image record")
    return img


def _read_records(path: Path, expected: int) -> list[CollectionImage]:
    return STORED.read_rows(path, RECORDS, _record, expected, "images")
