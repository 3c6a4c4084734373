"""Configuration: one TOML file, then environment variables, then command-line flags.

Validated once, in `load_config`, with one-line errors that name the offending key. Nothing is
read at import time, and keys are never prompted for.

    # veracity.toml
    model = "embedded"            # embedded | gguf:PATH | openai:NAME | scripted:PATH | NAME (with base_url)
    base_url = "http://127.0.0.1:8080/v1"
    cache_path = "~/.cache/veracity/cache.sqlite"
    [qacheck]
    qa = "auto"                   # auto | retriever-reader | closed-book | reciter-reader
    max_iterations = 5
    validator = true

Environment: VERACITY_CONFIG (file), VERACITY_MODEL, VERACITY_BASE_URL, VERACITY_API_KEY (or
OPENAI_API_KEY), VERACITY_CACHE_PATH, VERACITY_INDEX, VERACITY_N_THREADS, VERACITY_MAX_CLAIM_CHARS,
VERACITY_LLAMA_EXTRA_BUFFERS (auto | on | off: llama.cpp's repacking and AMX kernels, see llm/llama_guard.py),
VERACITY_CONCURRENCY (model calls of one check in flight together over an OpenAI-compatible server),
VERACITY_KB (off: no Wikipedia knowledge base by default), VERACITY_KB_LANGUAGE (en | fr | es), and
VERACITY_KB_DIR (where the knowledge base's index is built; read by retrieval/knowledge_base.py).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_values import apply_values
from .errors import ConfigError

#: auto: reciter-reader where the trained verifier reads the sources (the embedded model, verifier.use auto), else
#: retriever-reader when a source is configured (the knowledge base, an index, a search), so that every backend reads
#: the sources it is given; reciter-reader with none (qacheck/pipeline.py `QACheck.qa_for`)
QA_MODES = ("auto", "retriever-reader", "closed-book", "reciter-reader")
RETRIEVAL_MODES = ("bm25", "dense", "hybrid")  # Config.retrieval_mode; default: hybrid when the index has vectors
KB_LANGUAGES = ("en", "fr", "es")  # the editions of the Wikipedia knowledge base (retrieval/knowledge_base.py)


def default_cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "veracity", "cache.sqlite")


@dataclass
class QACheckConfig:
    qa: str = "auto"
    max_iterations: int = 5
    verifier: bool = True
    validator: bool = True
    top_k: int = 3  # passages the retriever-reader reads
    # Stop asking after this many questions in a row that the validator rejected or that repeated an earlier one
    # (0: no limit, only max_iterations): the reasoner then decides from the pairs kept so far. A rejected pair adds
    # nothing to the context, so by default the first rejection ends the questions (2 gives a resampled second try;
    # on HoVer with the embedded model that cost 3.3-3.7 more calls per claim for the same accuracy: README).
    max_rejected: int = 1

    def validate(self) -> None:
        if self.qa not in QA_MODES:
            raise ConfigError(f"qacheck.qa must be one of {', '.join(QA_MODES)}, not {self.qa!r}")
        if not 1 <= self.max_iterations <= 20:
            raise ConfigError(f"qacheck.max_iterations must be between 1 and 20, not {self.max_iterations}")
        if not 1 <= self.top_k <= 20:
            raise ConfigError(f"qacheck.top_k must be between 1 and 20, not {self.top_k}")
        if not 0 <= self.max_rejected <= 20:
            raise ConfigError(f"qacheck.max_rejected must be between 0 (no limit) and 20, not {self.max_rejected}")


LEAF_UNITS = ("sentences", "claims")


@dataclass
class LeafConfig:
    """LEAF: fact-checking answers (veracity.leaf). The rater defaults to the answering model."""

    rater_model: str | None = None  # model spec of the fact-checker (rater), chosen apart from the answerer
    rater_base_url: str | None = None  # OpenAI-compatible server of the rater
    top_k: int = 3  # passages retrieved per sentence's query
    max_sentences: int = 30  # longer answers: only the first N sentences are checked (and the result says so)
    rater_reasoning: bool = True  # the rater writes a short reasoning before its decision
    max_rounds: int = 2  # Fact-Check-Then-RAG: regenerations at most
    rag_top_k: int = 3  # passages retrieved for the question (answer:rag)
    max_knowledge: int = 9  # Fact-Check-Then-RAG: passages from failed sentences put in the prompt
    samples: int = 5  # answer:rank: answers sampled per question
    temperature: float = 0.8  # answer:rank: sampling temperature
    answer_max_tokens: int = 320
    #: what an answer is checked unit by unit as: its "sentences" (LEAF), or its atomic "claims" (veracity.claims,
    #: the extractor `veracity check-text` uses; questions, advice and opinions are left out)
    units: str = "sentences"

    def validate(self) -> None:
        for name, lo, hi in (
            ("top_k", 1, 20),
            ("max_sentences", 1, 1000),
            ("max_rounds", 0, 10),
            ("rag_top_k", 1, 50),
            ("max_knowledge", 1, 100),
            ("samples", 1, 50),
            ("answer_max_tokens", 16, 8192),
        ):
            if not lo <= getattr(self, name) <= hi:
                raise ConfigError(f"leaf.{name} must be between {lo} and {hi}, not {getattr(self, name)}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError(f"leaf.temperature must be between 0 and 2, not {self.temperature}")
        if self.rater_model is not None and not self.rater_model.strip():
            raise ConfigError("leaf.rater_model must not be empty")
        if self.units not in LEAF_UNITS:
            raise ConfigError(f"leaf.units must be {' or '.join(LEAF_UNITS)}, not {self.units!r}")


DEFAME_LABELS = ("Supported", "Refuted", "Not Enough Information", "Conflicting Evidence/Cherrypicking")
SEARCH_PROVIDERS = ("serper", "searxng", "local", "wikipedia", "none")
# how an OpenAI-compatible server decides among options (llm/http_caps.py, llm/http_decisions.py)
HTTP_CONSTRAINTS = ("grammar", "guided_choice", "json_schema")  # the constrained-decoding kinds, tried in this order
DECISION_MODES = ("auto", "logprob", *HTTP_CONSTRAINTS, "parse")
ENDPOINT_MODES = ("auto", "completions", "chat")  # where few-shot prompts go
# DEFAME's default excluded sites (web/filters.py): Table 5 of the DEFAME paper, fact-checking sites ...
EXCLUDED_FACT_CHECKERS: tuple[str, ...] = (
    "snopes.com",
    "politifact.com",
    "factcheck.org",
    "truthorfiction.com",
    "fullfact.org",
    "leadstories.com",
    "hoax-slayer.net",
    "checkyourfact.com",
    "reuters.com/fact-check",
    "reuters.com/article/fact-check",
    "apnews.com/APFactCheck",
    "factcheck.afp.com",
    "poynter.org",
    "factcheck.ge",
    "vishvasnews.com",
    "boomlive.in",
    "altnews.in",
    "thequint.com/news/webqoof",
    "factcheck.kz",
)
# ... and Table 6: sites that refuse scrapers or need a login
EXCLUDED_BOT_HOSTILE: tuple[str, ...] = (
    "facebook.com",
    "twitter.com",
    "x.com",
    "instagram.com",
    "youtube.com",
    "tiktok.com",
    "reddit.com",
    "ebay.com",
    "microsoft.com",
    "researchhub.com",
    "pinterest.com",
    "irs.gov",
)
DEFAULT_EXCLUDED: tuple[str, ...] = EXCLUDED_FACT_CHECKERS + EXCLUDED_BOT_HOSTILE
_WIKIPEDIA_LANGUAGE = re.compile(r"[a-z]{2,3}(-[a-z]+)*|simple")  # en, de, zh-min-nan, be-tarask, simple, ...
WIKIPEDIA_URL_KIND = "an http(s) URL of a MediaWiki api.php"  # what defame.wikipedia_url must be


def wikipedia_language_problem(code: object) -> str | None:
    """What is wrong with a Wikipedia language code (defame.wikipedia_language); None when it is fine."""
    if isinstance(code, str) and _WIKIPEDIA_LANGUAGE.fullmatch(code):
        return None
    return (
        f"{code!r} is not a Wikipedia language code (2-3 lowercase letters with optional -parts, e.g. en, de, "
        "zh-min-nan, or simple)"
    )


def http_url_problem(url: object, what: str = "an http(s) URL") -> str | None:
    """What is wrong with a URL that must be http(s) (defame.wikipedia_url); None when it is fine."""
    if isinstance(url, str) and re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", url.strip(), re.I):
        return None
    return f"{url!r} is not {what}"


def _default_excluded() -> list[str]:
    return list(DEFAULT_EXCLUDED)


SUMMARIZE_MODES = ("auto", "model", "excerpt")  # defame.summarize


@dataclass
class DefameConfig:
    """DEFAME: tool-using verification of text and image claims (veracity.defame)."""

    search: str | None = None  # serper | searxng | local | wikipedia | none; default: local with an index, else none
    searxng_url: str | None = None  # e.g. http://127.0.0.1:8888 (JSON output enabled in its settings.yml)
    wikipedia_language: str = "en"  # --search wikipedia: the language edition (en, de, zh-min-nan, simple, ...)
    wikipedia_url: str | None = None  # its API endpoint instead of https://{lang}.wikipedia.org/w/api.php
    serper_api_key: str | None = field(default=None, repr=False)  # default: $SERPER_API_KEY, read when used
    image_collection: str | None = None  # folder from `veracity images build`: local image + reverse search
    geoclip_weights: str | None = None  # local GeoCLIP/CLIP weights; without them geolocation is unavailable
    top_k: int = 3  # results kept per search
    max_iterations: int = 3  # plan-execute-judge rounds while the verdict is "not enough information"
    max_actions: int = 3  # actions per plan
    max_images: int = 8  # images one fact-check keeps (claim images first, then evidence images)
    scrape: bool = True  # read the pages search results point to
    allow_private_addresses: bool = False  # let the scraper fetch private/loopback addresses (SSRF guard off)
    excluded_domains: list[str] = field(default_factory=_default_excluded)  # the paper's list by default
    labels: list[str] = field(default_factory=lambda: list(DEFAME_LABELS))
    nei_label: str = "Not Enough Information"  # the label that sends the check back to planning
    #: no source decides after the last round: "prior" (the default): the label most often right for an undecided
    #: claim under the judge calibration's stated label prior (a stream of checked claims is mostly false;
    #: defame/judge_calibration.json), marked uncertain with that reason and the prior's share as its confidence;
    #: or "nei": not enough information
    undecided: str = "prior"
    #: how a search result enters the record: "model" (the paper: the model summarizes it), "excerpt" (the source's
    #: sentences nearest the claim, no model call) or "auto": excerpt where the trained verifier judges (it reads
    #: the sources' own sentences, not the summary), model otherwise
    summarize: str = "auto"
    rules: str = ""  # extra rules for the planner and the judge (benchmark-specific guidance)
    timeout: float = 20.0  # seconds per search request and per page

    def validate(self) -> None:
        if self.search is not None and self.search not in SEARCH_PROVIDERS:
            raise ConfigError(f"defame.search must be one of {', '.join(SEARCH_PROVIDERS)}, not {self.search!r}")
        for name, lo, hi in (
            ("top_k", 1, 10),
            ("max_iterations", 1, 10),
            ("max_actions", 1, 10),
            ("max_images", 0, 64),
        ):
            if not lo <= getattr(self, name) <= hi:
                raise ConfigError(f"defame.{name} must be between {lo} and {hi}, not {getattr(self, name)}")
        if len(self.labels) < 2 or any(not x.strip() for x in self.labels):
            raise ConfigError("defame.labels must name at least two non-empty labels")
        if self.undecided not in ("nei", "prior"):
            raise ConfigError(f"defame.undecided must be nei or prior, not {self.undecided!r}")
        if self.summarize not in SUMMARIZE_MODES:
            raise ConfigError(f"defame.summarize must be one of {', '.join(SUMMARIZE_MODES)}, not {self.summarize!r}")
        if self.nei_label not in self.labels:
            raise ConfigError(
                f"defame.nei_label {self.nei_label!r} must be one of defame.labels ({', '.join(self.labels)})"
            )
        if self.timeout <= 0:
            raise ConfigError(f"defame.timeout must be positive, not {self.timeout}")
        if self.search == "searxng" and not self.searxng_url:
            raise ConfigError(
                "defame.search = searxng needs defame.searxng_url (e.g. --searxng-url http://127.0.0.1:8888)"
            )
        if problem := wikipedia_language_problem(self.wikipedia_language):
            raise ConfigError(f"defame.wikipedia_language: {problem}")
        if self.wikipedia_url is not None and (problem := http_url_problem(self.wikipedia_url, WIKIPEDIA_URL_KIND)):
            raise ConfigError(f"defame.wikipedia_url: {problem}")


@dataclass
class VerifierConfig:
    """The trained evidence verifier (verify/): which model, and how the pipelines use it."""

    model: str = "default"  # "default": the verifier shipped in the package; or a folder (verify/model.py)
    top_k: int = 5  # passages the `verifier` and `lexical` pipelines retrieve
    #: QACheck's reasoner, LEAF's rater and DEFAME's judge draw on the verifier where they decide on evidence:
    #: on | off | auto (on with the embedded 135M model, whose own decisions are near chance; off with others)
    use: str = "auto"
    #: a verdict whose confidence is below this is shown as uncertain; unset: the verifier's own threshold, chosen
    #: on held-apart calibration data so that the verdicts at or above it are right 90% of the time
    #: (`uncertain_below` in its verifier.json; verify.uncertain_threshold)
    uncertain_below: float | None = None
    threads: int = 1  # torch threads for the verifier (1 is fastest beside other work on 2 cores)
    #: what runs its network (verify/runtime.py): torch, onnx (ONNX Runtime, the same readings) or onnx-int8 (8-bit
    #: weights: 1.5x faster on 2 cores, readings moved a little); the two last need `pip install 'veracity[fast]'`
    runtime: str = "torch"

    def validate(self) -> None:
        if self.runtime not in ("torch", "onnx", "onnx-int8"):
            raise ConfigError(f"verifier.runtime must be torch, onnx or onnx-int8, not {self.runtime!r}")
        if not 1 <= self.top_k <= 50:
            raise ConfigError(f"verifier.top_k must be between 1 and 50, not {self.top_k}")
        if self.uncertain_below is not None and not 0.0 <= self.uncertain_below <= 1.0:
            raise ConfigError(f"verifier.uncertain_below must be between 0 and 1, not {self.uncertain_below}")
        if not 1 <= self.threads <= 64:
            raise ConfigError(f"verifier.threads must be between 1 and 64, not {self.threads}")
        if self.use not in ("auto", "on", "off"):
            raise ConfigError(f"verifier.use must be auto, on or off, not {self.use!r}")
        if not self.model.strip():
            raise ConfigError('verifier.model must not be empty ("default" is the shipped verifier)')


@dataclass
class HttpConfig:
    """OpenAI-compatible servers (model NAME with base_url, or openai:NAME): what `llm/http_caps.py` would
    otherwise find out by asking the server once (the answer is kept in http_capabilities.json beside the
    response cache; delete it after changing the server's flags)."""

    decisions: str = "auto"  # auto | logprob | grammar | guided_choice | json_schema | parse
    endpoint: str = "auto"  # few-shot prompts: auto | completions | chat

    def validate(self) -> None:
        if self.decisions not in DECISION_MODES:
            raise ConfigError(f"http.decisions must be one of {', '.join(DECISION_MODES)}, not {self.decisions!r}")
        if self.endpoint not in ENDPOINT_MODES:
            raise ConfigError(f"http.endpoint must be one of {', '.join(ENDPOINT_MODES)}, not {self.endpoint!r}")


@dataclass
class FactchecksConfig:
    """Published fact-checks (`veracity factchecks`, factchecks/): those of a claim are shown before the check's own
    verdict, on every front end."""

    #: a store folder; unset: the default store (factchecks/store.py) when one was imported; "off": none
    store: str | None = None
    k: int = 3  # at most this many shown
    #: a published fact-check found for the claim, with a rating that says true or false in so many words, decides
    #: the verdict (its rationale names it; the pipeline's own reading is kept in the notes). Off by default, and
    #: always off in evaluation runs (the benchmarks exclude fact-checking sites, as the DEFAME paper does)
    inform: bool = False

    def validate(self) -> None:
        if not 1 <= self.k <= 20:
            raise ConfigError(f"factchecks.k must be between 1 and 20, not {self.k}")


@dataclass
class Config:
    """The whole configuration: defaults < the TOML file (--config, ./veracity.toml, $VERACITY_CONFIG) <
    VERACITY_* environment variables < command-line flags."""

    #: embedded | gguf:PATH | hf:PATH | openai:NAME | scripted:FILE | NAME (a model of the server at base_url)
    model: str = "embedded"
    base_url: str | None = None  # an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
    #: the key of that server or of the OpenAI API (else OPENAI_API_KEY); never printed
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 120.0  # seconds per HTTP request to a model server
    max_retries: int = 3  # retries of a failed model-server request (0-10), with backoff
    n_ctx: int = 8192  # context window of a model run in-process (embedded, gguf:)
    n_threads: int | None = None  # CPU threads of a model run in-process; default: llama.cpp's choice
    seed: int = 0  # sampling seed of the model calls
    keep_states: bool = True  # embedded backend: keep evaluated prompt prefixes between calls
    llama_extra_buffers: str = "auto"  # llama.cpp weight repacking / AMX kernels: auto | on | off (llm/llama_guard.py)
    #: independent model calls of one check in flight together (LEAF's sentences); used with backends that
    #: run calls in parallel (OpenAI-compatible servers), since the embedded model takes one call at a time
    concurrency: int = 4
    cache: bool = True  # keep model replies in the response cache (same prompt, same reply, no call)
    cache_path: str = field(default_factory=default_cache_path)  # the response cache's SQLite file
    max_claim_chars: int = 2000  # the longest claim accepted
    prompts_dir: str | None = None  # a folder of prompt templates (NAME.txt) that replace the shipped ones
    #: an index folder, or a knowledge base by name (kb:wikipedia, kb:wikipedia-fr: retrieval/knowledge_base.py);
    #: unset, `load_config` makes it the Wikipedia knowledge base when `kb` is on and it is installed
    index: str | None = None
    retrieval_mode: str | None = None  # bm25 | dense | hybrid; default: hybrid when the index has vectors
    #: read the Wikipedia knowledge base (pip install 'veracity[wiki]') when no index, evidence or search is given
    kb: bool = True
    kb_language: str = "en"  # en | fr | es: the language edition of the knowledge base
    #: where `veracity serve`, `mcp`, `proxy` and `recheck` keep runs: an SQLite file (unset: the default file),
    #: postgresql://... (several workers share it) or embedded:DIR (veracity/db)
    database_url: str | None = None
    qacheck: QACheckConfig = field(default_factory=QACheckConfig)
    leaf: LeafConfig = field(default_factory=LeafConfig)
    defame: DefameConfig = field(default_factory=DefameConfig)
    verifier: VerifierConfig = field(default_factory=VerifierConfig)
    http: HttpConfig = field(default_factory=HttpConfig)
    factchecks: FactchecksConfig = field(default_factory=FactchecksConfig)

    def validate(self) -> None:
        if not self.model.strip():
            raise ConfigError("model must not be empty")
        if self.max_claim_chars < 1:
            raise ConfigError(f"max_claim_chars must be positive, not {self.max_claim_chars}")
        if self.timeout <= 0:
            raise ConfigError(f"timeout must be positive, not {self.timeout}")
        if not 0 <= self.max_retries <= 10:
            raise ConfigError(f"max_retries must be between 0 and 10, not {self.max_retries}")
        if not 1 <= self.concurrency <= 64:
            raise ConfigError(f"concurrency must be between 1 and 64, not {self.concurrency}")
        if self.n_ctx < 512:
            raise ConfigError(f"n_ctx must be at least 512, not {self.n_ctx}")
        if self.llama_extra_buffers not in ("auto", "on", "off"):
            raise ConfigError(f"llama_extra_buffers must be auto, on or off, not {self.llama_extra_buffers!r}")
        if self.kb_language not in KB_LANGUAGES:
            raise ConfigError(f"kb_language must be one of {', '.join(KB_LANGUAGES)}, not {self.kb_language!r}")
        if self.retrieval_mode is not None and self.retrieval_mode not in RETRIEVAL_MODES:
            raise ConfigError(
                f"retrieval_mode must be {', '.join(RETRIEVAL_MODES[:-1])} or {RETRIEVAL_MODES[-1]}, "
                f"not {self.retrieval_mode!r}"
            )
        self.qacheck.validate()
        self.leaf.validate()
        self.defame.validate()
        self.verifier.validate()
        self.http.validate()
        self.factchecks.validate()


ENV_KEYS = (
    "model",
    "base_url",
    "api_key",
    "cache_path",
    "index",
    "n_threads",
    "max_claim_chars",
    "timeout",
    "max_retries",
    "prompts_dir",
    "llama_extra_buffers",
    "concurrency",
    "kb",
    "kb_language",
    "database_url",
)


def config_file(path: str | os.PathLike | None = None, env: dict[str, str] | None = None) -> str | os.PathLike | None:
    """The configuration file in use: `path`, else $VERACITY_CONFIG, else ./veracity.toml when it exists."""
    file = path or (os.environ if env is None else env).get("VERACITY_CONFIG")
    if file is None and Path("veracity.toml").is_file():
        file = "veracity.toml"
    return file


def load_config(
    path: str | os.PathLike | None = None, overrides: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> Config:
    """Build the configuration: defaults < file < environment < overrides (flags; None = not given)."""
    env = dict(os.environ if env is None else env)
    cfg = Config()
    file = config_file(path, env)
    if file is not None:
        from .reading import MAX_CONFIG_BYTES, read_limited

        try:
            p = Path(file).expanduser()
        except RuntimeError:  # "~user" of an unknown user
            p = Path(file)
        raw = read_limited(p, MAX_CONFIG_BYTES, "configuration file", error=ConfigError)
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(" ".join(f"configuration file {p} is not valid TOML: {e}".split())) from None
        apply_values(cfg, data)
    for k in ENV_KEYS:
        if value := env.get(f"VERACITY_{k.upper()}"):
            try:
                apply_values(cfg, {k: value})
            except ConfigError as e:
                raise ConfigError(f"environment variable VERACITY_{k.upper()}: {e}") from None
    if cfg.api_key is None and env.get("OPENAI_API_KEY"):
        cfg.api_key = env["OPENAI_API_KEY"]
    flat: dict[str, Any] = {}
    for k, v in (overrides or {}).items():
        if v is None:
            continue
        if "." in k:
            section, sub = k.split(".", 1)
            flat.setdefault(section, {})[sub] = v
        else:
            flat[k] = v
    apply_values(cfg, flat, prefix="--")
    cfg.cache_path = os.path.expanduser(cfg.cache_path)
    cfg.validate()
    if cfg.index is None:
        cfg.index = default_index(cfg)
    return cfg


def default_index(cfg: Config) -> str | None:
    """The evidence a check reads when it is given no index: the Wikipedia knowledge base (kb:wikipedia-LANG), when
    `kb` is on, it is installed, and no web search other than the local one was chosen; else None."""
    if not cfg.kb or cfg.defame.search not in (None, "local"):
        return None
    from .retrieval.knowledge_base import default_spec

    return default_spec(cfg.kb_language)
