"""A configuration file's values (and the environment's, and the flags') checked against the schema's types: one
value coerced or refused with a one-line ConfigError that names its key (`check_type`), a table applied onto a
section of the configuration (`apply_values`). The schema itself is veracity.config."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any

from .errors import ConfigError


def check_type(value: Any, annotation: Any, where: str) -> Any:
    """Coerce/validate one value against a (simple) annotation."""
    hint = annotation
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        if value is None and type(None) in args:
            return None
        hint = next(a for a in args if a is not type(None))
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INT.fullmatch(value.strip()):
            try:
                return int(value.strip())
            except ValueError:  # more digits than Python converts
                pass
    elif hint is float:
        number: float | None = None
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                number = float(value)
            elif isinstance(value, str):
                number = float(value.strip())
        except (ValueError, OverflowError):
            number = None
        if number is not None:
            if not math.isfinite(number):  # nan and inf pass every "<= limit" check the wrong way
                raise ConfigError(f"{where} must be a finite number, not {_short_repr(value)}")
            return number
    elif hint is str:
        if isinstance(value, str):
            return value
    elif typing.get_origin(hint) is list:  # list[str]: a list, or "a, b, c" from the environment or a flag
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        raise ConfigError(f"{where} must be a list of strings, not {_short_repr(value)}")
    else:  # pragma: no cover
        return value
    raise ConfigError(f"{where} must be {getattr(hint, '__name__', hint)}, not {_short_repr(value)}")


_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def apply_values(obj: Any, values: dict[str, Any], prefix: str = "") -> None:
    fields = {f.name: f for f in dataclasses.fields(obj)}
    hints = typing.get_type_hints(type(obj))
    for key, value in values.items():
        name = key.replace("-", "_")
        where = f"{prefix}{key}"
        if name not in fields:
            raise ConfigError(f"unknown configuration key {where!r} (known: {', '.join(sorted(fields))})")
        current = getattr(obj, name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{where} must be a table")
            apply_values(current, value, prefix=f"{where}.")
        else:
            setattr(obj, name, check_type(value, hints[name], where))
