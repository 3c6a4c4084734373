"""Where an image was taken, estimated by GeoCLIP from local weights only.

GeoCLIP (Vivanco et al., NeurIPS 2023) embeds the image with CLIP ViT-L/14 and compares it with
the embeddings of a gallery of 100k GPS coordinates. `Geolocator` loads it strictly offline:
``defame.geoclip_weights`` names a GeoCLIP release folder (config.json, model.safetensors and the
gallery CSV, as published on the Hugging Face Hub) and the CLIP backbone that release names must
already be in the local Hugging Face cache. Nothing is ever downloaded: where loading would need
the network, a one-line error says what is missing. Without weights or the ``geoclip`` package the
tool is unavailable (`unavailable()` says why) and never runs. It never makes up a location.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import BackendUnavailable, UserError
from ..image_files import ImageFile

NO_WEIGHTS = "geolocation needs local GeoCLIP/CLIP weights (set defame.geoclip_weights); none configured"
NO_PACKAGE = (
    "geolocation needs the geoclip package, which is not installed: pip install 'geoclip>=1.3' "
    "(it then runs offline from defame.geoclip_weights and the local Hugging Face cache)"
)
RELEASE_FILES = ("config.json", "model.safetensors")
MAX_TOP_K = 100


class GeoGuess(NamedTuple):
    lat: float
    lon: float
    prob: float  # GeoCLIP's probability for this gallery coordinate


class Geolocator:
    """GeoCLIP over local weights; loaded on first use, then kept."""

    def __init__(self, weights: str | Path | None, *, device: str = "cpu") -> None:
        self.weights = Path(weights).expanduser() if weights else None
        self.device = device
        self._model: Any = None

    @classmethod
    def from_config(cls, weights: str | None) -> Geolocator:
        return cls(weights)

    def unavailable(self) -> str | None:
        """Why geolocation cannot run here, or None when the weights and the package are in place."""
        if self.weights is None:
            return NO_WEIGHTS
        if not _geoclip_installed():
            return NO_PACKAGE
        if not self.weights.is_dir():
            return f"the GeoCLIP weights folder {self.weights} (defame.geoclip_weights) does not exist"
        missing = [name for name in RELEASE_FILES if not (self.weights / name).is_file()]
        if missing:
            return (
                f"{self.weights} is not a GeoCLIP release folder (missing {', '.join(missing)}; "
                "defame.geoclip_weights must name a local copy of a GeoCLIP release)"
            )
        return None

    def predict(self, image: ImageFile, top_k: int = 5) -> list[GeoGuess]:
        """The `top_k` most likely coordinates, most likely first."""
        if not 1 <= top_k <= MAX_TOP_K:
            raise UserError(f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        model = self._load()
        try:
            gps, probs = model.predict(io.BytesIO(image.data), top_k=top_k)
            rows = gps.tolist() if hasattr(gps, "tolist") else list(gps)
            values = probs.tolist() if hasattr(probs, "tolist") else list(probs)
        except Exception as e:
            raise BackendUnavailable(f"GeoCLIP failed on image {image.source}: {_one_line(e)}") from None
        return [GeoGuess(float(lat), float(lon), float(p)) for (lat, lon), p in zip(rows, values)]

    def describe(self, guesses: list[GeoGuess]) -> str:
        """The guesses as text, with place names where an offline reverse geocoder can give them."""
        if not guesses:
            return "GeoCLIP gave no location."
        places = place_names([(g.lat, g.lon) for g in guesses])
        lines = ["GeoCLIP's most likely locations (latitude, longitude; probability):"]
        for i, (g, place) in enumerate(zip(guesses, places), start=1):
            lines.append(f"{i}. {g.lat:.4f}, {g.lon:.4f}; {g.prob:.1%}" + (f" (near {place})" if place else ""))
        lines.append("An estimate from what the image looks like, not a record of where it was taken.")
        return "\n".join(lines)

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        reason = self.unavailable()
        if reason:
            raise BackendUnavailable(reason)
        from geoclip import GeoCLIP

        if not hasattr(GeoCLIP, "from_pretrained"):
            raise BackendUnavailable(
                "this geoclip version can only load weights by downloading them: "
                "pip install 'geoclip>=1.3' to load them from a local folder"
            )
        try:
            self._model = GeoCLIP.from_pretrained(str(self.weights), local_files_only=True, device=self.device)
        except Exception as e:
            if _needs_network(e):
                raise BackendUnavailable(
                    f"GeoCLIP's CLIP backbone (named in {self.weights / 'config.json'}) is not in the local "
                    "Hugging Face cache, and veracity never downloads weights: copy it into the cache "
                    f"($HF_HOME/hub) first ({_one_line(e, 120)})"
                ) from None
            raise BackendUnavailable(f"cannot load GeoCLIP from {self.weights}: {_one_line(e)}") from None
        return self._model


def place_names(coords: list[tuple[float, float]]) -> list[str | None]:
    """ "City, region, country code" for each coordinate when the offline `reverse_geocoder` package is
    installed (it ships its GeoNames table); None for each otherwise."""
    if not coords:
        return []
    try:
        import reverse_geocoder

        found = reverse_geocoder.search(coords, mode=1, verbose=False)
        return [", ".join(p for p in (r.get("name"), r.get("admin1"), r.get("cc")) if p) or None for r in found]
    except Exception:  # not installed, or its table is unreadable: coordinates only
        return [None] * len(coords)


def _geoclip_installed() -> bool:
    if "geoclip" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("geoclip") is not None
    except (ImportError, ValueError):
        return False


def _needs_network(e: BaseException) -> bool:
    """Whether a loading error means a file was not found locally and would have to be downloaded."""
    names = {cls.__name__ for cls in type(e).__mro__}
    text = str(e).lower()
    return bool(names & {"LocalEntryNotFoundError", "OfflineModeIsEnabled"}) or any(
        s in text
        for s in (
            "local_files_only",
            "offline mode",
            "cannot find the requested files in the local cache",
            "couldn't connect",
            "outgoing traffic has been disabled",
        )
    )


def _one_line(e: BaseException, limit: int = 200) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
