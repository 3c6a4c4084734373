"""Prompt specs: one per model call a pipeline makes, so that the call is one line.

A `PromptSpec` says everything about one call: the template file it fills, the slots it needs (checked
against the template's placeholders when the spec is defined, so a missing or extra slot fails every test
that imports it), how each untrusted value is quoted (`formats`, with `veracity.prompts.quoting`), the
text the call appends to the template (`cue`, e.g. `"\\nVerdict:"`, for a call that continues a prompt),
`max_tokens` and `stop`, and either a parser (text) or a decision among options (through the backend's
`choose`, strictly re-read with `strict_choose` where a label must be asserted unambiguously).

Each system declares its specs next to its pipeline (`qacheck/prompts.py`, `defame/prompts.py`,
`leaf/prompts.py`, `baselines/prompts.py`). A pipeline binds them to the template files in use
(`spec.load(config.prompts_dir)`: the user's folder overrides the packaged files) and calls
`prompt.ask(model, SLOT=value, ...)`, which renders, completes or chooses, parses, retries once with the
spec's format `reminder` when the reply is unusable, and records a parse failure.

A parse failure is recorded one way, `record_parse_failure`: a `parse_failure` step in the trace
(`for_stage`, `raw`, `fallback`) and one line `"<stage>: <problem> in '<raw>'"` appended to the check's
list of failures (the `failures=` list the pipeline passes, which becomes `Verdict.parse_failures`). A
spec with no `problem` has no failure of its own (a decision whose `None` leads to a further fallback).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..llm.base import FORMAT_REMINDER, Choice, CompletionRequest
from .parsers import RETRY_MARK, choice_text, is_parsed, parse_label
from .template import _SLOT, PromptTemplate, load_prompt  # _SLOT: the one placeholder syntax, [[NAME]]

if TYPE_CHECKING:
    from ..llm.model import RunModel
    from ..trace import Tracer

RAW_CHARS = 120  # how much of the raw reply a failure line quotes

Formatter = Callable[[Any], str]


class PromptSpecError(ValueError):
    """A spec that does not fit its template (a programming error, caught by any test importing it)."""


def _cue_slots(cue: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_SLOT.findall(cue)))


def _usable(value: Any) -> bool:
    return value is not None


@dataclass(frozen=True, eq=False)
class PromptSpec:
    """One model call: template file, slots, request, parser or decision, and what a failure means."""

    name: str  # e.g. "qacheck.verifier"; unique across the systems
    template: str  # the template file's name in prompts/templates (without .txt)
    stage: str  # the stage its calls are metered and traced under
    slots: tuple[str, ...]  # every slot the call fills: the template's and the cue's
    max_tokens: int
    stop: tuple[str, ...] = ()
    #: how a slot's value is written into the prompt; untrusted text is quoted here (veracity.prompts.quoting).
    #: Slots not named are written with str().
    formats: Mapping[str, Formatter] = field(default_factory=dict)
    cue: str = ""  # appended to the template; may hold slots (e.g. " [[FINDINGS]]\nVerdict:")
    parser: Callable[..., Any] | None = None  # reply text (and the call's parse_args) -> value; None: unusable
    usable: Callable[[Any], bool] = _usable  # whether a parsed value can be used (default: it is not None)
    options: tuple[str, ...] = ()  # a decision among these options; or given per call when `decision`
    decision: bool = False  # the call is a `choose` (set when `options` are given)
    strict: bool = False  # read a parsed decision strictly (`strict_choose`): a label only when asserted alone
    reminder: str = ""  # a text call's format reminder: an unusable reply is retried once with it
    chat: bool = False  # sent as a chat message rather than a few-shot document the model continues
    problem: str = ""  # what an unusable reply lacks ("no question"); "" = an unusable reply is no failure
    fallback: str = ""  # what the pipeline does instead, for the trace (a call may say it more precisely)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(self.slots))
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "formats", dict(self.formats))
        if self.options:
            object.__setattr__(self, "decision", True)
        if self.decision and (self.parser is not None or self.reminder):
            raise PromptSpecError(
                f"prompt spec {self.name!r}: a decision has no parser or reminder of its own "
                "(the backend's choose reads it and retries with the options)"
            )
        if len(set(self.slots)) != len(self.slots):
            raise PromptSpecError(f"prompt spec {self.name!r}: a slot is named twice in {self.slots}")
        self.check(load_prompt(self.template))

    # -- the template ------------------------------------------------------------------------------

    def check(self, template: PromptTemplate) -> None:
        """Raise PromptSpecError unless the template's and the cue's placeholders are exactly the spec's slots."""
        needed = template.slots | set(_cue_slots(self.cue))
        missing, extra = needed - set(self.slots), set(self.slots) - needed
        unknown = set(self.formats) - set(self.slots)
        if missing or extra or unknown:
            raise PromptSpecError(
                f"prompt spec {self.name!r} does not fit template {self.template!r}: "
                + "; ".join(
                    part
                    for part in (
                        f"the template needs {sorted(missing)}" if missing else "",
                        f"the spec fills {sorted(extra)} that the template lacks" if extra else "",
                        f"formats for unknown slots {sorted(unknown)}" if unknown else "",
                    )
                    if part
                )
            )

    def load(self, prompts_dir: str | None = None) -> Prompt:
        """The spec bound to its template file: `prompts_dir`'s when it has one, else the packaged one."""
        template = load_prompt(self.template, prompts_dir)
        try:
            self.check(template)
        except PromptSpecError as e:
            raise ConfigError(
                f"prompt template {self.template}.txt"
                f"{f' in {prompts_dir}' if prompts_dir else ''} has other slots than the "
                f"pipeline fills: {e}"
            ) from None
        return Prompt(self, template)

    def render(self, prompts_dir: str | None = None, **values: Any) -> str:
        return self.load(prompts_dir).render(**values)

    def follow(self, name: str, cue: str, **changes: Any) -> PromptSpec:
        """A spec for a call that continues this one's prompt: the same template and slots, then `cue`
        (whose slots are added). Request, parser and failure are the new call's own (`changes`)."""
        slots = self.slots + tuple(s for s in _cue_slots(cue) if s not in self.slots)
        formats = {**self.formats, **changes.pop("formats", {})}
        return PromptSpec(
            name=name,
            template=self.template,
            stage=changes.pop("stage", self.stage),
            slots=slots,
            formats=formats,
            cue=self.cue + cue,
            chat=self.chat,
            **changes,
        )


def record_parse_failure(
    tracer: Tracer | None,
    stage: str,
    raw: str,
    fallback: str,
    *,
    problem: str,
    where: str = "",
    failures: list[str] | None = None,
) -> str:
    """The one way a parse failure is recorded: a `parse_failure` step in the trace and a line in the check's
    list of failures. Returns the line."""
    if tracer is not None:
        tracer.emit("parse_failure", for_stage=stage, raw=raw, fallback=fallback)
    line = f"{stage}{f' ({where})' if where else ''}: {problem} in {raw[:RAW_CHARS]!r}"
    if failures is not None:
        failures.append(line)
    return line


@dataclass
class Reply:
    """What one call gave: the parsed value (or the chosen option), the raw reply and the prompt."""

    spec: PromptSpec
    prompt: str
    raw: str  # what the model wrote; after a retry, both replies joined by RETRY_MARK
    value: Any  # the parser's value, the chosen option, or None
    ok: bool  # the value is usable
    choice: Choice | None = None  # a decision's full outcome (probabilities, method)
    failure: str | None = None  # the failure line, once recorded
    tracer: Tracer | None = field(default=None, repr=False)
    failures: list[str] | None = field(default=None, repr=False)

    @property
    def confidence(self) -> float | None:
        return self.choice.confidence if self.choice is not None else None

    @property
    def probabilities(self) -> dict[str, float] | None:
        return self.choice.probabilities if self.choice is not None else None

    @property
    def method(self) -> str:
        return self.choice.method if self.choice is not None else ""

    def fail(self, fallback: str | None = None, *, where: str = "") -> str:
        """Record this reply as a parse failure (the call does it itself unless it was asked to `defer`)."""
        self.failure = record_parse_failure(
            self.tracer,
            self.spec.stage,
            self.raw,
            fallback or self.spec.fallback,
            problem=self.spec.problem or "no usable reply",
            where=where,
            failures=self.failures,
        )
        return self.failure


@dataclass(frozen=True)
class Prompt:
    """A spec bound to the template file in use; `ask` makes the call."""

    spec: PromptSpec
    template: PromptTemplate

    def render(self, **values: Any) -> str:
        """The prompt: the template, then the cue, with every slot's value written by its format."""
        spec = self.spec
        missing, extra = set(spec.slots) - values.keys(), values.keys() - set(spec.slots)
        if missing or extra:
            raise ValueError(f"prompt {spec.name!r}: missing slots {sorted(missing)}, unknown {sorted(extra)}")
        texts = {k: spec.formats[k](v) if k in spec.formats else str(v) for k, v in values.items()}
        body = self.template.render(**{k: texts[k] for k in self.template.slots})
        # one pass, as the template's, so a value that itself contains [[X]] is left alone
        return body + _SLOT.sub(lambda m: texts[m.group(1)], spec.cue)

    def request(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        images: tuple[str, ...] | list[str] = (),
    ) -> CompletionRequest:
        return CompletionRequest.of(
            prompt,
            continuation=not self.spec.chat,
            max_tokens=self.spec.max_tokens if max_tokens is None else max_tokens,
            stop=self.spec.stop,
            temperature=temperature,
            seed=seed,
            images=images,
        )

    def ask(
        self,
        model: RunModel,
        *,
        failures: list[str] | None = None,
        tracer: Tracer | None = None,
        options: list[str] | tuple[str, ...] | None = None,
        parse_args: Mapping[str, Any] | None = None,
        fallback: str | None = None,
        where: str = "",
        defer: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        images: tuple[str, ...] | list[str] = (),
        **values: Any,
    ) -> Reply:
        """The whole call: render the slots (`values`, upper case), complete or choose, parse, retry once with
        the reminder, and record a parse failure (into `failures` and the trace) unless `defer`.

        `options`: a decision's options when the spec does not fix them. `parse_args`: what the parser needs
        besides the text. `fallback`/`where`: the failure's fallback when the call knows it better, and where
        it happened (e.g. "round 2"). `tracer`: the model's tracer unless given.
        """
        spec = self.spec
        tracer = tracer if tracer is not None else getattr(model, "tracer", None)
        prompt = self.render(**values)
        request = self.request(prompt, max_tokens=max_tokens, temperature=temperature, seed=seed, images=images)
        if spec.decision:
            opts = list(spec.options if options is None else options)
            choice = (
                strict_choose(model, request, opts, stage=spec.stage)
                if spec.strict
                else model.choose(request, opts, stage=spec.stage)
            )
            reply = Reply(
                spec,
                prompt,
                choice.raw,
                choice.option,
                choice.option is not None,
                choice=choice,
                tracer=tracer,
                failures=failures,
            )
        else:
            out = model.complete(request, stage=spec.stage)
            raw, value = out.text, self._parse(out.text, parse_args)
            if spec.reminder and not spec.usable(value):
                retry = model.complete(replace(request.with_reminder(spec.reminder), n=1), stage=spec.stage)
                raw, value = f"{raw}{RETRY_MARK}{retry.text}", self._parse(retry.text, parse_args)
            reply = Reply(spec, prompt, raw, value, spec.usable(value), tracer=tracer, failures=failures)
        if not reply.ok and spec.problem and not defer:
            reply.fail(fallback, where=where)
        return reply

    def _parse(self, text: str, parse_args: Mapping[str, Any] | None) -> Any:
        if self.spec.parser is None:
            return text
        return self.spec.parser(text, **(parse_args or {}))


def strict_choose(model: RunModel, request: CompletionRequest, labels: list[str], *, stage: str) -> Choice:
    """The model's choice among `labels`, read strictly when it was read from text.

    Scored decisions (log-probabilities) stand as they are. A decision the backend read from free text
    is re-read with `parse_label`, which takes a label only when the text asserts exactly one: a
    negated label, several labels, a refusal or a hedge give `option=None` (after one retry with the
    format reminder when the backend had not retried), never a guessed label.
    """
    choice = model.choose(request, list(labels), stage=stage)
    if not is_parsed(choice.method):
        return choice
    option = parse_label(choice_text(choice.raw, choice.method), labels)
    if option is not None or choice.method == "parse-retry":
        return replace(choice, option=option, probabilities=choice.probabilities if option else None)
    # the backend's first-match reading took a label from an answer that does not assert one: ask once more
    retry = model.complete(
        replace(request.with_reminder(FORMAT_REMINDER.format(options=", ".join(labels))), n=1, max_tokens=16),
        stage=stage,
    )
    option = parse_label(retry.text, labels)
    return replace(
        choice, option=option, probabilities=None, raw=f"{choice.raw}{RETRY_MARK}{retry.text}", method="parse-retry"
    )
