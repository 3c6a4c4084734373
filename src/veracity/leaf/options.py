"""Multiple-choice options: reading them, showing them, and finding which one a text chose.

Options are a mapping from a short key (a letter `A`, `B`, ... or a number) to the option's text,
as in MIRAGE (`{"A": "yes", "B": "no"}`). `extract_letter` reads the chosen key out of free text,
for backends whose decisions are parsed rather than scored; pipelines decide through
`Model.choose` and only fall back on it when the choice was parsed from text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import UserError

_KEY = re.compile(r"^(?:[A-Za-z]|\d{1,2})$")


def parse_options(data: Any, *, where: str = "options") -> dict[str, str]:
    """Options from a JSON value: {"A": "text", ...}, or a list of texts (keyed A, B, C, ...).

    Raises a one-line UserError saying what is wrong: not an object, fewer than two options, a key
    that is not a letter or a number, an option with no text.
    """
    if isinstance(data, list):
        if len(data) > 26:
            raise UserError(f"{where}: at most 26 options as a list (got {len(data)})")
        data = {chr(ord("A") + i): v for i, v in enumerate(data)}
    if not isinstance(data, dict):
        raise UserError(
            f'{where} must be a JSON object like {{"A": "first option", "B": "second option"}}, '
            f"not {type(data).__name__}"
        )
    options: dict[str, str] = {}
    for key, value in data.items():
        k = str(key).strip()
        if not _KEY.match(k):
            raise UserError(f"{where}: option keys must be single letters or numbers (A, B, C or 1, 2, 3), not {key!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"{where}: option {k} has no text")
        if k in options:
            raise UserError(f"{where}: option {k} appears twice")
        options[k] = " ".join(value.split())
    if len(options) < 2:
        raise UserError(f"{where}: a multiple-choice question needs at least two options, got {len(options)}")
    return options


def load_options_file(path: str | Path) -> dict[str, str]:
    """Options from a JSON file; every problem is a one-line UserError naming the file."""
    p = Path(path)
    from ..reading import MAX_TEXT_FILE_BYTES, read_limited

    try:
        text = read_limited(p, MAX_TEXT_FILE_BYTES, "options file").decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"cannot read options file {p}: {e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UserError(
            f'options file {p} is not valid JSON ({e}); write it like {{"A": "first option", "B": "second option"}}'
        ) from None
    return parse_options(data, where=f"options file {p}")


def format_options(options: dict[str, str]) -> str:
    """One option per line: `A. text`."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def options_of(metadata: dict[str, Any]) -> dict[str, str] | None:
    """The options a claim carries in its metadata (the MIRAGE loader puts them there), or None."""
    data = metadata.get("options") if metadata else None
    return None if data is None else parse_options(data, where="the question's options")


# --------------------------------------------------------------------------- reading a letter

_STRONG_CUE = (
    r"(?:final\s+answer|correct\s+answer|best\s+answer|right\s+answer|answer|correct\s+option|"
    r"best\s+option|correct\s+choice|best\s+choice|i\s+(?:choose|pick|select)|choose)"
)
_WEAK_CUE = r"(?:option|choice)"
_LINK = r"(?:\s*(?:is|would\s+be|should\s+be|=|:|-))*\s*(?:option|choice)?\s*"


def _key_pattern(keys: list[str], group: str = "k") -> str:
    return "(?P<" + group + ">" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)) + ")"


def extract_letter(text: str, options: dict[str, str]) -> str | None:
    """The option key `text` chooses, or None when it names none (or names several equally).

    In order of trust:
    1. the last explicit statement, e.g. "the correct answer is (E)", "Answer: B", "**Final answer: C**",
       "the answer is yes" (an option's own text after the cue);
    2. a reply that starts with a key: "B", "(B) Surgical pinning", "**C.** ...", "B) no";
    3. exactly one key written as "(X)" or "[X]" anywhere;
    4. "option X" mentions that all name the same key ("option A is wrong ... option E" names two: no);
    5. a reply that is exactly one option's text.
    Keys are matched in upper case only outside parentheses, so the article "a" is never option A.
    """
    if not text or not options:
        return None
    keys = list(options)
    t = text.strip()
    kp = _key_pattern(keys)

    # 1. explicit statements: a key (bracketed or bare, not followed by a letter) or an option's text
    def statements(cue: str) -> list[str]:
        pat = re.compile(r"(?i:" + cue + r")" + _LINK + r"[\(\[\*\"']*\s*" + kp + r"(?![A-Za-z0-9])")
        return [m.group("k") for m in pat.finditer(t) if m.group("k") in keys]

    strong = statements(_STRONG_CUE)
    if strong:
        return strong[-1]
    by_text = sorted(options.items(), key=lambda kv: len(kv[1]), reverse=True)
    text_hits: list[str] = []
    for m in re.finditer(r"(?i:" + _STRONG_CUE + r")" + _LINK + r"[\*\"']*", t):
        rest = t[m.end() :].lower()
        for k, v in by_text:
            v = v.lower().rstrip(".")
            if v and rest.startswith(v) and not rest[len(v) : len(v) + 1].isalnum():
                text_hits.append(k)
                break
    if text_hits:
        return text_hits[-1]
    # 2. the reply starts with a key
    m = re.match(
        r"^[\s\*\#>]*(?:[\(\[]\s*" + kp + r"\s*[\)\]]|" + kp.replace("<k>", "<k2>") + r"(?:[\.\):,]|\s*$|\s+-\s|\*\*))",
        t,
    )
    if m:
        k = m.group("k") or m.group("k2")
        if k in keys:
            return k
    # 3. exactly one distinct bracketed key
    bracketed = {m.group("k") for m in re.finditer(r"[\(\[]\s*" + kp + r"\s*[\)\]]", t)} & set(keys)
    if len(bracketed) == 1:
        return bracketed.pop()
    # 4. "option X" mentions that all name the same key
    weak = set(statements(_WEAK_CUE))
    if len(weak) == 1:
        return weak.pop()
    # 5. the reply is exactly an option's text
    bare = t.strip(" .*\"'").lower()
    matches = [k for k, v in options.items() if v.lower().rstrip(".") == bare]
    return matches[0] if len(matches) == 1 else None
