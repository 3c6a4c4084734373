"""What an image's metadata says: when and where it was taken, with which camera, and edited with what.

`read_metadata` reads EXIF (and PNG text chunks) with Pillow and never raises: malformed or
missing metadata gives an `ImageMetadata` with the fields it could read. Metadata is a hint, not
proof: social media strip it, and anyone can write it.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from PIL import ExifTags, Image

from ..image_files import ImageFile

#: Software whose name in the metadata means the image went through an editor.
EDITORS = (
    "photoshop",
    "gimp",
    "lightroom",
    "snapseed",
    "canva",
    "picsart",
    "affinity photo",
    "pixelmator",
    "paint.net",
    "facetune",
    "meitu",
    "photopea",
    "capture one",
)

MALFORMED = "the EXIF metadata is malformed and was partly ignored"
_EXIF_DATE = re.compile(r"(\d{4})[:\-](\d{2})[:\-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})")


@dataclass(frozen=True)
class ImageMetadata:
    width: int
    height: int
    format: str
    taken: str | None = None  # EXIF DateTimeOriginal (else DateTime), ISO "YYYY-MM-DDTHH:MM:SS"
    modified: str | None = None  # EXIF DateTime (when the file was last written by the camera or software)
    gps: tuple[float, float] | None = None  # (latitude, longitude) in degrees
    camera: str | None = None  # "Make Model"
    software: str | None = None
    edited: bool = False
    edit_signs: tuple[str, ...] = ()  # why `edited` is True
    has_exif: bool = False
    problem: str | None = None  # the metadata could not be read completely

    def describe(self) -> str:
        """A few lines of plain text for the fact-check report."""
        lines = [f"{self.format} image, {self.width}x{self.height} pixels."]
        if not self.has_exif and not self.problem:
            lines.append("No EXIF metadata (often stripped by social media; absence proves nothing).")
        if self.taken:
            lines.append(f"Taken: {self.taken} (camera clock, time zone unknown).")
        if self.gps:
            lines.append(f"GPS location: {self.gps[0]:.6f}, {self.gps[1]:.6f} (latitude, longitude).")
        if self.camera:
            lines.append(f"Camera: {self.camera}.")
        if self.software:
            lines.append(f"Software: {self.software}.")
        if self.edited:
            lines.append("Signs of editing: " + "; ".join(self.edit_signs) + ".")
        elif self.has_exif:
            lines.append("No sign of editing in the metadata.")
        if self.problem:
            lines.append(f"Note: {self.problem}.")
        if self.has_exif:
            lines.append("Metadata can be removed or rewritten by anyone: a hint, not proof.")
        return "\n".join(lines)


def read_metadata(image: ImageFile) -> ImageMetadata:
    """The image's EXIF date, GPS position, camera and software; never raises."""
    fields: dict[str, Any] = {}
    problem = None
    has_exif = False
    try:
        with warnings.catch_warnings(record=True) as caught, Image.open(io.BytesIO(image.data)) as pil:
            warnings.simplefilter("always")
            if _text(pil.info.get("Software")):
                fields["software"] = _text(pil.info.get("Software"))  # a PNG text chunk
            exif = pil.getexif()
            has_exif = len(exif) > 0
            if has_exif:
                fields.update({k: v for k, v in _read_exif(exif).items() if v is not None})
        if any(issubclass(w.category, UserWarning) for w in caught):  # Pillow's "Corrupt EXIF data" and the like
            problem = MALFORMED
    except Exception:  # malformed EXIF raises anything from struct.error to SyntaxError
        problem = MALFORMED
    signs = _edit_signs(fields.get("software"), fields.get("taken_original"), fields.get("modified"))
    return ImageMetadata(
        width=image.width,
        height=image.height,
        format=image.format,
        taken=fields.get("taken_original") or fields.get("modified"),
        modified=fields.get("modified"),
        gps=fields.get("gps"),
        camera=fields.get("camera"),
        software=fields.get("software"),
        edited=bool(signs),
        edit_signs=tuple(signs),
        has_exif=has_exif,
        problem=problem,
    )


def _read_exif(exif: Image.Exif) -> dict[str, Any]:
    """Fields from IFD0 and the Exif and GPS sub-IFDs; each read on its own so one bad tag spoils nothing else."""
    base = ExifTags.Base
    out: dict[str, Any] = {}
    exif_ifd = _safe(lambda: exif.get_ifd(ExifTags.IFD.Exif)) or {}
    out["taken_original"] = _safe(lambda: _iso(exif_ifd.get(base.DateTimeOriginal) or exif.get(base.DateTimeOriginal)))
    out["modified"] = _safe(lambda: _iso(exif.get(base.DateTime)))
    out["camera"] = _safe(lambda: _camera(_text(exif.get(base.Make)), _text(exif.get(base.Model))))
    out["software"] = _safe(lambda: _text(exif.get(base.Software)))
    out["gps"] = _safe(lambda: _gps(exif.get_ifd(ExifTags.IFD.GPSInfo)))
    return out


def _safe(read):
    try:
        return read()
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return None
    value = " ".join(value.replace("\x00", " ").split())
    return value or None


def _iso(value: Any) -> str | None:
    """EXIF "YYYY:MM:DD HH:MM:SS" as ISO; None for blanks such as "0000:00:00 00:00:00"."""
    m = _EXIF_DATE.search(_text(value) or "")
    if not m:
        return None
    try:
        return datetime(*map(int, m.groups())).isoformat()
    except ValueError:
        return None


def _camera(make: str | None, model: str | None) -> str | None:
    if make and model and model.lower().startswith(make.lower()):
        return model  # "Canon" + "Canon EOS 5D"
    return " ".join(p for p in (make, model) if p) or None


def _gps(ifd: dict[int, Any]) -> tuple[float, float] | None:
    gps = ExifTags.GPS
    lat = _degrees(ifd.get(gps.GPSLatitude), _text(ifd.get(gps.GPSLatitudeRef)), "S")
    lon = _degrees(ifd.get(gps.GPSLongitude), _text(ifd.get(gps.GPSLongitudeRef)), "W")
    if lat is None or lon is None or abs(lat) > 90 or abs(lon) > 180:
        return None
    return round(lat, 7), round(lon, 7)


def _degrees(dms: Any, ref: str | None, negative: str) -> float | None:
    """(degrees, minutes, seconds) rationals to signed decimal degrees."""
    if not isinstance(dms, (tuple, list)) or not 1 <= len(dms) <= 3:
        return None
    value = sum(float(part) / 60**i for i, part in enumerate(dms))
    if not math.isfinite(value):
        return None
    return -value if (ref or "").upper().startswith(negative) else value


def _edit_signs(software: str | None, taken: str | None, modified: str | None) -> list[str]:
    signs = []
    editor = next((e for e in EDITORS if software and e in software.lower()), None)
    if editor:
        signs.append(f"saved by an image editor ({software})")
    if taken and modified and taken != modified:
        signs.append(f"the file was last written {modified}, not when it was taken ({taken})")
    return signs
