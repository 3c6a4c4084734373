"""What a client can choose: the pipelines of the registry, the QA modules and the configured models.

Clients pick models by the name the operator configured (`--model`, `--extra-model`); they can never
name an arbitrary model spec (a file path, a URL), so a request cannot make the server open files.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..check import has_source
from ..claims import METHODS
from ..claims.sources import TEXT_FILE_TYPES
from ..config import QA_MODES
from ..errors import UserError
from ..inputs import DEFAULT_MAX_ANSWER_CHARS, IMAGE_TYPES, MAX_TEXT_BYTES
from ..leaf.rater import Rater
from ..pipeline import Pipeline, qa_for
from ..registry import get_pipeline, pipeline_specs
from .answers import DESCRIPTION as ANSWER_CHECK_DESCRIPTION
from .answers import NAME as ANSWER_CHECK
from .answers import AnswerCheckPipeline
from .errors import ApiError

if TYPE_CHECKING:
    from ..config import Config
    from ..llm.model import Model

QA_DESCRIPTIONS = {
    "auto": "answers from the sources where the trained verifier does not read them (any model but the embedded "
    "one), else recites",
    "reciter-reader": "the model recites a passage it remembers, then answers from it",
    "closed-book": "the model answers from memory",
    "retriever-reader": "answers from passages of the source given, or retrieved from the configured index",
}


#: the groups the page lists pipelines in, in this order, each with what it means
PIPELINE_GROUPS = {
    "recommended": "Recommended",
    "variants": "QACheck with a fixed way of answering",
    "baselines": "Baselines: simpler, for comparison",
    "research": "Research: ablations (one part left out, to measure what it adds)",
}
RECOMMENDED = ("qacheck", "defame", "verifier")


def pipeline_group(name: str, description: str) -> str:
    """Which of PIPELINE_GROUPS a pipeline is listed in (an ablation says so in its registered description)."""
    if name in RECOMMENDED:
        return "recommended"
    if "ablation" in description.lower():
        return "research"
    return "variants" if name.startswith("qacheck") else "baselines"


@dataclass
class PipelineInfo:
    name: str
    description: str
    qa: str | None  # "choice" when the request's QA module applies, a fixed module name, or None
    needs_index: bool  # with the default QA module
    accepts_images: bool  # DEFAME: the page shows the image and date fields only then
    input_kind: str  # "claim", or "answer" (a question and an answer: the server's answer-check)
    available: bool
    unavailable_reason: str | None = None
    group: str = "baselines"  # one of PIPELINE_GROUPS

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _order(name: str, description: str) -> tuple[int, int, str]:
    """By group (PIPELINE_GROUPS' order), the recommended ones in RECOMMENDED's order, the others by name."""
    group = pipeline_group(name, description)
    return (list(PIPELINE_GROUPS).index(group), RECOMMENDED.index(name) if name in RECOMMENDED else 0, name)


def run_config(config: Config, *, model: str | None = None, qa: str | None = None) -> Config:
    """A copy of `config` for one run, with the chosen model and QA module."""
    qacheck = dataclasses.replace(config.qacheck, qa=qa or config.qacheck.qa)
    return dataclasses.replace(config, model=model or config.model, qacheck=qacheck)


class Catalog:
    def __init__(
        self,
        config: Config,
        extra_models: list[str] | None = None,
        *,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
        max_images: int = 4,
        max_image_bytes: int = 10_000_000,
        max_text_bytes: int = MAX_TEXT_BYTES,
        max_text_claims: int = 100,
        lazy_models: bool = False,
    ) -> None:
        self.config = config
        self.lazy_models = lazy_models  # each model loaded on its first call (a checker that may never call one)
        self.models = list(dict.fromkeys([config.model, *(extra_models or [])]))
        self.max_answer_chars = max_answer_chars
        self.max_images = max_images
        self.max_image_bytes = max_image_bytes
        self.max_text_bytes = max_text_bytes
        self.max_text_claims = max_text_claims
        self.rater = Rater(config)  # answer check's rater: leaf.rater_model, built once; else the run's model
        self.pipelines = self._describe_pipelines()
        self._built: dict[str, Model] = {}
        self._lock = threading.Lock()

    def _describe_pipelines(self) -> dict[str, PipelineInfo]:
        """From what each pipeline declares at registration (`pipeline.PipelineSpec`): nothing is built here."""
        out = {}
        has_index = has_source(self.config)
        for name, spec in sorted(pipeline_specs().items(), key=lambda kv: _order(kv[0], kv[1].description)):
            available = has_index or not spec.always_needs_index(self.config)
            out[name] = PipelineInfo(
                name=name,
                description=spec.description,
                qa=spec.qa,
                needs_index=spec.needs_index(self.config),
                accepts_images=spec.accepts_images,
                input_kind=spec.input_kind,
                available=available,
                unavailable_reason=None if available else "needs an index: start the server with --index DIR",
                group=pipeline_group(name, spec.description),
            )
        # the server's own answer check (LEAF): a question and an answer, checked against the index
        out[ANSWER_CHECK] = PipelineInfo(
            name=ANSWER_CHECK,
            description=ANSWER_CHECK_DESCRIPTION,
            qa=None,
            needs_index=True,
            accepts_images=False,
            input_kind="answer",
            available=has_index,
            unavailable_reason=None if has_index else "needs an index: start the server with --index DIR",
        )
        return out

    def qa_modules(self) -> list[dict[str, Any]]:
        return [
            {
                "name": m,
                "description": QA_DESCRIPTIONS.get(m, ""),
                "available": m != "retriever-reader" or has_source(self.config),
                "default": m == self.config.qacheck.qa,
            }
            for m in QA_MODES
        ]

    @property
    def text_pipeline(self) -> str:
        """The claim pipeline a text check uses by default: the evidence verifier (no model call per claim, as
        `veracity check-text`) where the server has an index, else the claim form's default."""
        verifier = self.pipelines.get("verifier")
        return "verifier" if verifier is not None and verifier.available else "qacheck"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipelines": [p.to_dict() for p in self.pipelines.values()],
            "pipeline_groups": PIPELINE_GROUPS,
            "qa_modules": self.qa_modules(),
            "models": [{"name": m, "default": i == 0} for i, m in enumerate(self.models)],
            "defaults": {
                "pipeline": "qacheck",
                "qa": self.config.qacheck.qa,
                "model": self.models[0],
                "text_pipeline": self.text_pipeline,
            },
            "max_claim_chars": self.config.max_claim_chars,
            "max_answer_chars": self.max_answer_chars,
            "max_images": self.max_images,
            "max_image_bytes": self.max_image_bytes,
            "image_types": list(IMAGE_TYPES),
            "texts": {
                "max_bytes": self.max_text_bytes,
                "max_claims": self.max_text_claims,
                "extract": list(METHODS),
                "file_types": list(TEXT_FILE_TYPES),
            },
        }

    # -- resolving one request ----------------------------------------------------------------------

    def resolve(
        self,
        pipeline: str,
        qa: str | None,
        model: str | None,
        input_kind: str = "claim",
        *,
        evidence_given: bool = False,
    ) -> tuple[Pipeline, Config, str | None]:
        """The pipeline instance and run config for a request whose input is `input_kind` ("claim", or "answer":
        a question and an answer), or an ApiError saying what to change. With `evidence_given` (passages sent
        with the claim) a pipeline that retrieves reads them, index or not, and QACheck answers its questions from
        them where the request names no QA module (`qa_for`)."""
        if model is not None and model not in self.models:
            raise ApiError(
                400, "unknown_model", f"unknown model {model!r}; this server offers: {', '.join(self.models)}"
            )
        if qa is not None and qa not in QA_MODES:
            raise ApiError(400, "unknown_qa", f"unknown QA module {qa!r}; choose one of: {', '.join(QA_MODES)}")
        if pipeline not in self.pipelines:
            raise ApiError(
                400,
                "unknown_pipeline",
                f"unknown pipeline {pipeline!r}; choose one of: {', '.join(self.pipelines)} "
                "(GET /api/pipelines describes them)",
            )
        info = self.pipelines[pipeline]
        if info.input_kind != input_kind:
            if info.input_kind == "answer" and pipeline == ANSWER_CHECK:
                raise ApiError(
                    400,
                    "input_not_supported",
                    f"pipeline {pipeline!r} checks an answer: send `question` and `answer`, not `claim`",
                )
            if input_kind == "answer":
                raise ApiError(
                    400,
                    "input_not_supported",
                    f"pipeline {pipeline!r} checks a claim: send `claim`, or use pipeline "
                    f"{ANSWER_CHECK!r} to check a question's answer",
                )
            raise ApiError(
                400,
                "input_not_supported",
                f"pipeline {pipeline!r} takes {info.input_kind} input, not a claim; this API starts "
                f"claim checks and {ANSWER_CHECK} only so far",
            )
        if qa is not None and info.qa not in ("choice", qa):
            what = f"always uses the {info.qa} QA module" if info.qa else "has no QA module"
            raise ApiError(
                400,
                "qa_not_applicable",
                f"pipeline {pipeline!r} {what}: leave qa out, or choose a pipeline that takes one (e.g. qacheck)",
            )
        cfg = run_config(self.config, model=model, qa=qa_for(qa, evidence_given))
        if pipeline == ANSWER_CHECK:
            if not cfg.index:
                raise ApiError(
                    400,
                    "index_required",
                    f"{ANSWER_CHECK} retrieves evidence for each sentence from an index, and this server "
                    "has none: restart the server with --index DIR (build one with `veracity index "
                    "build`)",
                )
            return AnswerCheckPipeline(cfg, self.rater), cfg, None
        try:
            pipe = get_pipeline(pipeline, cfg)
        except UserError as e:
            raise ApiError(400, "unknown_pipeline", str(e)) from None
        if pipe.needs_retriever(cfg) and not cfg.index and not evidence_given:
            raise ApiError(
                400,
                "index_required",
                f"pipeline {pipeline!r} with the {getattr(pipe, 'qa_name', '')} QA module retrieves "
                "from an index, and this server has none: choose another QA module or pipeline, or "
                "send the passages to read as `evidence`, or restart the server with --index DIR",
            )
        return pipe, cfg, getattr(pipe, "qa_name", None)

    def model(self, spec: str) -> Model:
        """The model for `spec`, built once and shared by every run (backends are thread-safe)."""
        from ..llm import make_model

        with self._lock:
            if spec not in self._built:
                self._built[spec] = make_model(run_config(self.config, model=spec), lazy=self.lazy_models)
            return self._built[spec]

    def preload(self) -> None:
        """Build every offered model now, so a bad spec fails at startup rather than on the first check."""
        for spec in self.models:
            self.model(spec)
        if self.config.index:
            self.rater.model()  # a separate rater (leaf.rater_model), when one is configured
