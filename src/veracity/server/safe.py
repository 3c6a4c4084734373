"""What the server reads from a client or from its own database cannot break a response.

JSON allows a string to hold half of a UTF-16 surrogate pair (`"\\ud800"`), which no UTF-8 response can carry,
and Python's json module reads `NaN`, `Infinity` and `1e999999` as floats that strict JSON cannot write. A
request carrying either is refused where it is read (`strict_json`); text that is already stored, or that a
model produced, is mended where it is written and read (`mend`): a lone surrogate becomes U+FFFD and a
non-finite number null.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import ApiError

MAX_JSON_DEPTH = 64  # a check's body is two levels deep; more is no request this API takes


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def mend_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a valid pair, if split in two, is joined)."""
    if not has_lone_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def mend(value: Any) -> Any:
    """A copy of a JSON-like value that any UTF-8, strict-JSON response can carry (see the module doc)."""
    if isinstance(value, str):
        return mend_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {mend_text(k) if isinstance(k, str) else k: mend(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mend(v) for v in value]
    return value


def _refuse_constant(name: str) -> Any:
    raise ApiError(
        400,
        "invalid_number",
        f"the JSON body holds {name}, which is not a number JSON allows: send a "
        "finite number (or a string where text is expected)",
    )


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ApiError(
            400,
            "invalid_number",
            f"the JSON body holds the number {text[:40]}, which is out of range: send a finite number",
        )
    return value


def _where(path: list[Any]) -> str:
    return ".".join(str(p) for p in path) or "the body"


def check_tree(value: Any) -> None:
    """Refuse (400) a parsed JSON body with a lone surrogate in any string (key or value), or nested deeper
    than MAX_JSON_DEPTH. Iterative: a hostile body cannot exhaust the stack here."""
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if len(path) > MAX_JSON_DEPTH:
            raise ApiError(400, "invalid_json", f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(item, str):
            if has_lone_surrogate(item):
                raise ApiError(
                    400,
                    "invalid_text",
                    f"{_where(path)}: the text holds a lone UTF-16 surrogate (an escape such as "
                    "\\ud800 without its pair), which is no character: send valid Unicode",
                )
        elif isinstance(item, dict):
            for k, v in item.items():
                if has_lone_surrogate(k):
                    raise ApiError(
                        400,
                        "invalid_text",
                        f"{_where(path)}: a key holds a lone UTF-16 surrogate, "
                        "which is no character: send valid Unicode",
                    )
                stack.append((v, path + [k]))
        elif isinstance(item, list):
            stack.extend((v, path + [i]) for i, v in enumerate(item))


def strict_json(body: bytes) -> Any:
    """The request body parsed as strict JSON, or a 400 ApiError (`invalid_number`: NaN, Infinity or a number
    out of float range; `invalid_text`: a lone surrogate; `invalid_json`: not UTF-8, or nested too deep).
    A body that is not JSON at all raises json.JSONDecodeError, for FastAPI to answer as before (422)."""
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "the JSON body is not valid UTF-8") from None
    except RecursionError:
        raise ApiError(400, "invalid_json", f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            raise
        # e.g. an integer of more than 4300 digits
        raise ApiError(
            400, "invalid_number", f"the JSON body holds a number that cannot be read: {str(e)[:120]}"
        ) from None
    check_tree(value)
    return value
