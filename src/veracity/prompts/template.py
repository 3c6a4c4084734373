"""Loading and filling prompt template files.

A template file may start with `#` comment lines (dropped); the rest is the prompt body with slots
written as `[[NAME]]`. Users can point veracity at their own folder of templates (config
`prompts_dir`), which overrides the packaged files of the same name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import ConfigError

PACKAGED = Path(__file__).with_name("templates")
_SLOT = re.compile(r"\[\[([A-Z_][A-Z0-9_]*)\]\]")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    body: str

    @property
    def slots(self) -> set[str]:
        return set(_SLOT.findall(self.body))

    def render(self, **values: object) -> str:
        missing = self.slots - values.keys()
        extra = values.keys() - self.slots
        if missing or extra:
            raise ValueError(f"prompt {self.name!r}: missing slots {sorted(missing)}, unknown {sorted(extra)}")
        # one pass, so a slot value that itself contains [[X]] (e.g. evidence text) is left alone
        return _SLOT.sub(lambda m: str(values[m.group(1)]), self.body)


def _read(path: Path, name: str) -> PromptTemplate:
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return PromptTemplate(name=name, body="\n".join(lines).strip("\n"))


@cache
def load_prompt(name: str, prompts_dir: str | None = None) -> PromptTemplate:
    """Load template `name` from `prompts_dir` when it has one, else from the packaged templates."""
    for folder in ([Path(prompts_dir)] if prompts_dir else []) + [PACKAGED]:
        path = folder / f"{name}.txt"
        if path.is_file():
            return _read(path, name)
    raise ConfigError(f"no prompt template named {name!r} (looked in {prompts_dir or ''} {PACKAGED})")
