"""Run configuration: pydantic v2 models, YAML loading, ``--set`` overrides, fingerprints.

One YAML file describes one build (see ``configs/``). Every model forbids unknown keys,
so a typo fails before any work with the key's dotted path. Relative paths are resolved
against the current working directory (the repository root for the shipped configs and
the Prefect deployments). Secrets never live in a config: a config names the
environment variable that holds an API key (``llm.api_key_env``), and the key is read
from the environment only when a request is sent.

Example:
    >>> from cseaug.config import RunConfig
    >>> cfg = RunConfig.model_validate({
    ...     "name": "demo", "method": "ski",
    ...     "corpus": {"path": "corpus.txt"},
    ...     "llm": {"backend": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:8000/v1"},
    ... })
    >>> cfg.sample.size
    20000
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from cseaug.errors import ConfigError
from cseaug.hashing import json_sha256
from cseaug.roots import check_root, work_dir
from cseaug.secrets import is_secret_name, url_credentials_problem

Method = Literal["sts", "nli", "ski", "osscse", "generate_cse"]
"""How the ``aigen`` rows of a build get their views (the ``method`` column)."""

ViewName = Literal["positive", "intermediate", "negative", "knowledge"]

LLM_METHODS: frozenset[str] = frozenset({"sts", "nli", "ski"})

DATASET_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""A dataset name: a plain directory name under ``<root>/datasets``."""
MAX_DATASET_NAME = 100
"""Longest dataset name: file names made of it (the run store ``<name>-<id>``, exports,
staging folders) stay far below a file system's 255 bytes per name."""


def dataset_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a dataset name, or None when it can.

    Example:
        >>> dataset_name_problem("wiki-sts") is None, dataset_name_problem("../x")[:22]
        (True, "dataset name '../x' is")
    """
    if len(name) > MAX_DATASET_NAME:
        return (
            f"dataset name of {len(name)} characters is too long: at most {MAX_DATASET_NAME} "
            "(it names directories and files)"
        )
    if DATASET_NAME_RE.match(name):
        return None
    return (
        f"dataset name '{name}' is not allowed: use letters, digits, '.', '_' and '-', "
        "starting with a letter or digit"
    )


PATTERN_METHODS: frozenset[str] = frozenset({"sts", "nli"})

OLD_PRECISION_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
"""The training precisions' names before they took torch's, as every precision and dtype of
a config has (:func:`cseaug.devices.resolve_precision`): still accepted, because the docs
showed them (``--precision bf16``) and users' configs may hold them; read as the new names."""


def _torch_precision_name(value: Any) -> Any:
    """``value`` with an old precision name replaced by torch's."""
    return OLD_PRECISION_NAMES.get(value, value) if isinstance(value, str) else value


TrainingPrecision = Annotated[
    Literal["auto", "float32", "bfloat16", "float16"], BeforeValidator(_torch_precision_name)
]
"""A training precision setting (the trainer's, VAEGPT-Sim's); ``fp32``, ``bf16`` and
``fp16`` are read as ``float32``, ``bfloat16``, ``float16``."""


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are errors, values are validated on assignment,
    and every number is finite (``allow_inf_nan=False``: an infinite timeout or a NaN
    threshold passed validation and failed later, in the HTTP client or a comparison).

    A rejected value is never repeated in the error (``hide_input_in_errors``): it may be a
    secret pasted in the wrong place, and errors reach logs and Prefect's database.
    """

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, hide_input_in_errors=True, allow_inf_nan=False
    )


class CorpusConfig(StrictModel):
    """Where the source sentences come from and how they are cleaned."""

    name: str | None = Field(
        None,
        description="Name of the corpus, part of every row id (hash of name + text). "
        "Defaults to the file stem or the dataset id.",
    )
    path: str | None = Field(None, description="Local file: .txt, .csv, .tsv, .jsonl, .parquet.")
    hf_dataset: str | None = Field(
        None, description="Hugging Face dataset id, read with `datasets` (extra 'hf')."
    )
    hf_config: str | None = Field(None, description="Configuration name of `hf_dataset`.")
    hf_split: str = Field("train", description="Split of `hf_dataset` to read.")
    format: Literal["auto", "text", "csv", "tsv", "jsonl", "parquet", "hf"] = Field(
        "auto", description="File format; 'auto' decides by the file suffix."
    )
    text_column: str | None = Field(
        None, description="Column holding the sentence (required for every format but text)."
    )
    view_columns: dict[ViewName, str] = Field(
        default_factory=dict,
        description="Columns carried as given views, e.g. {positive: sent1, negative: hard_neg} "
        "for NLI triples (SKICSE quadruplets keep them beside the generated knowledge).",
    )
    min_chars: int = Field(
        1, ge=1, description="Lines shorter than this (after normalising) are dropped."
    )
    max_chars: int = Field(
        1000,
        ge=1,
        description="Lines longer than this (after normalising) are dropped as over-long.",
    )
    invisible_characters: Literal["remove", "reject", "keep"] = Field(
        "remove",
        description="Invisible characters (Unicode's Default_Ignorable_Code_Point: zero-width "
        "spaces, bidirectional controls, tag characters U+E0000-U+E007F, ...; zero-width "
        "joiners only at a line's edges): 'remove' them (a line left empty is rejected as "
        "'empty'), 'reject' the line ('invisible_characters'), or 'keep' them.",
    )
    special_tokens: Literal["reject", "keep"] = Field(
        "reject",
        description="Chat special tokens in a line or a given view (<|im_end|>, <|endoftext|>, "
        "[INST], <<SYS>>, <start_of_turn>, <s>, ...): 'reject' the line ('special_token') or 'keep' it.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> CorpusConfig:
        if (self.path is None) == (self.hf_dataset is None):
            raise ValueError("give exactly one of corpus.path or corpus.hf_dataset")
        if self.min_chars > self.max_chars:
            raise ValueError(
                f"corpus.min_chars ({self.min_chars}) exceeds corpus.max_chars ({self.max_chars})"
            )
        return self


class SampleConfig(StrictModel):
    """The seeded choice of source sentences; the rest of the corpus become `other` rows."""

    size: int = Field(
        20_000, ge=1, description="Number of source sentences that get generated views."
    )
    seed: int = Field(42, description="Seed of the sample; same seed, same sample on any machine.")
    include_other: bool = Field(
        True, description="Publish the rest of the corpus as `other` rows (the hybrid dataset)."
    )


class PatternConfig(StrictModel):
    """The pattern source and the fixed in-context examples (NGCSE, 'Pattern Simulation with LLM')."""

    source: Literal["sts12", "sts_table", "nli_csv", "snli_senteval", "paper"] = Field(
        description="'sts12': SemEval STS.input/STS.gs files of a directory; 'sts_table': any "
        "(s1, s2, score) table incl. STS-B; 'nli_csv': sent0,sent1,hard_neg; 'snli_senteval': "
        "SentEval s1/s2/labels files; 'paper': the examples printed in NGCSE's appendix."
    )
    path: str | None = Field(None, description="File or directory of the pattern source.")
    columns: list[str] | None = Field(
        None,
        description="For 'sts_table': names of the (s1, s2, score) columns, if not auto-detected.",
    )
    k: int = Field(3, ge=1, le=20, description="Examples per level (the paper uses 3).")
    seed: int = Field(0, description="Seed of the draw of examples, made once per run.")
    positive_min_score: float = Field(
        4.0, description="STS positive examples: score strictly above."
    )
    negative_max_score: float = Field(
        1.0, description="STS negative examples: score strictly below."
    )
    intermediate_range: tuple[float, float] = Field(
        (1.0, 4.0), description="STS intermediate examples: score within this closed range."
    )


class GenerationConfig(StrictModel):
    """How the LLM views are written."""

    derive_from: Literal["input", "positive"] = Field(
        "input",
        description="Write the intermediate and negative from the input sentence (NGCSE's prompts) "
        "or from the generated positive (NGCSE's process description, step 3).",
    )
    prompts_dir: str | None = Field(
        None, description="Directory of prompt templates; default: ./prompts."
    )


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

AUTO = "auto"
"""The value of a size or engine setting that the library chooses for the machine it runs on."""

BatchSize = Annotated[int, Field(ge=1)] | Literal["auto"]
"""A batch size: a number, or ``auto`` (chosen from the device and its free memory)."""


class VLLMEngineConfig(StrictModel):
    """How vLLM's offline engine schedules a build's requests (backend ``vllm``; docs/gpu.md).

    These settings change how fast answers come, never what is asked: they are not part of
    the response cache key nor of the data fingerprint. Other ``vllm.LLM`` arguments (which
    may change answers, e.g. ``quantization``) go in ``llm.engine_kwargs``.
    """

    enable_prefix_caching: bool = Field(
        True,
        description="Reuse the KV cache of prompt prefixes: every request of a view starts with the "
        "same system message (instructions and k-shot examples), computed once.",
    )
    enable_chunked_prefill: bool = Field(
        True, description="Mix prompt prefills into decode steps instead of stalling them."
    )
    max_num_seqs: int = Field(
        512,
        ge=1,
        description="Sequences decoded at once. Short prompts (~220 tokens) and answers leave the KV "
        "cache room for many; past ~512 a 7B model's decode step is compute-bound (docs/gpu.md).",
    )
    max_model_len: Annotated[int, Field(ge=16)] | Literal["auto"] = Field(
        AUTO,
        description="Longest prompt + answer in tokens; 'auto': max_tokens + 2,048 tokens for the "
        "prompt, capped at the model's context. A longer prompt fails alone (a reject).",
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="Share of the GPU's memory vLLM may take (weights + KV cache)."
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs that split the model.")
    requests_per_call: int = Field(
        16384,
        ge=1,
        description="Requests per LLM.chat call (a default shard, 5,000 sentences x 3 views, is one "
        "call). LLM.chat returns only when all its requests are done, so the response cache "
        "stores a call's answers when it returns: a crash loses at most one call.",
    )


class CircuitBreakerConfig(StrictModel):
    """When to stop sending requests to an endpoint that fails most of them (docs/llm-backends.md)."""

    window: int = Field(
        32,
        ge=1,
        description="Finished requests (after their retries) the failure rate is taken over.",
    )
    failure_rate: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Share of failed requests in the window that stops generation; the prompts "
        "not yet sent are recorded as 'circuit_open' rejects and a rerun sends them.",
    )


OPENAI_MAX_TEMPERATURE = 2.0
"""The highest temperature the OpenAI chat API (and servers that follow it) accepts."""


class BatchAPIConfig(StrictModel):
    """How backend ``openai-batch`` waits for the OpenAI Batch API (docs/llm-backends.md).

    These settings change when answers come, never what is asked: they are not part of the
    response cache key nor of the data fingerprint.
    """

    poll_interval_s: float = Field(
        30.0, gt=0, description="Seconds before the first status check of a batch."
    )
    max_poll_interval_s: float = Field(
        600.0,
        gt=0,
        description="Longest wait between status checks (each wait is 1.5x the last, up to this).",
    )
    max_wait_s: float = Field(
        90_000.0,
        gt=0,
        description="Give up waiting after this long (default 25 h, past the 24 h window): the "
        "build stops, the batch keeps running, and a rerun re-attaches to it.",
    )
    completion_window: Literal["24h"] = Field(
        "24h", description="The batch's completion window (the API accepts only 24h)."
    )


class PriceConfig(StrictModel):
    """USD per 1M tokens, for the dry run's cost estimate (``openai`` and ``openai-batch``).

    Defaults: gpt-3.5-turbo-0125 (the shipped NGCSE configs' model) as published on
    openai.com/api/pricing in 2024; not re-read since (no internet here): check them before
    budgeting and set the prices of your model.
    """

    input_per_1m: float = Field(0.50, ge=0, description="USD per 1M prompt tokens.")
    output_per_1m: float = Field(1.50, ge=0, description="USD per 1M completion tokens.")
    batch_discount: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Batch API price as a share of the online price (OpenAI: half price).",
    )


def base_url_problem(urls: list[str], setting: str = "llm.base_url") -> str | None:
    """Why a list of endpoint URLs cannot be used, or None: each URL is checked like a single
    ``base_url`` (no credentials), the list is not empty and names no endpoint twice.

    Example:
        >>> base_url_problem(["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]) is None
        True
        >>> print(base_url_problem(["http://10.0.0.1:8000/v1", "http://10.0.0.1:8000/v1/"]))
        llm.base_url names http://10.0.0.1:8000/v1/ twice: list each endpoint once
    """
    if not urls:
        return f"{setting} is an empty list: give one URL or a list of several"
    seen: set[str] = set()
    for url in urls:
        problem = url_credentials_problem(url, setting)
        if problem:
            return problem
        if url.rstrip("/") in seen:
            return f"{setting} names {url} twice: list each endpoint once"
        seen.add(url.rstrip("/"))
    return None


class FailoverConfig(StrictModel):
    """When a listed endpoint is taken out of service and tried again (docs/llm-backends.md)."""

    failures: int = Field(
        3,
        ge=1,
        description="Connection errors, timeouts or 5xx in a row that take an endpoint out.",
    )
    cooldown_s: float = Field(
        5.0,
        gt=0,
        description="First time out of service; it doubles each time the endpoint fails "
        "again when tried, and is reset by an answer.",
    )
    max_cooldown_s: float = Field(300.0, gt=0, description="Longest time out of service.")


class LLMConfig(StrictModel):
    """Which LLM writes the views, and how requests are sent."""

    backend: Literal[
        "auto", "openai", "openai-compatible", "vllm", "transformers", "openai-batch"
    ] = Field(
        description="'openai': api.openai.com; 'openai-compatible': any base_url (vllm serve, TGI, ...); "
        "'openai-batch': the OpenAI Batch API (half price, answers within 24 h; same cache as 'openai'); "
        "'vllm': offline engine in this process; 'transformers': local Hugging Face chat model; "
        "'auto': 'vllm' when the vllm package is installed and a CUDA GPU is visible, else "
        "'transformers' (an explicit name is always used as given)."
    )
    model: str = Field(description="Model name (API) or Hugging Face id / local path.")
    model_revision: str | None = Field(
        None,
        description="Your name for the weights behind 'model' (e.g. a commit or checkpoint tag); "
        "part of the response cache key, so answers of other weights served under the same "
        "name are never reused.",
    )
    base_url: str | list[str] | None = Field(
        None,
        description="Endpoint for 'openai-compatible', e.g. http://127.0.0.1:8000/v1, or a list "
        "of endpoints serving the same model (one `vllm serve` per GPU or machine): requests are "
        "balanced over them, `concurrency` in flight on each.",
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="Name of the environment variable holding the API key (the key itself is "
        "never part of a config).",
    )
    concurrency: int = Field(
        64,
        ge=1,
        le=4096,
        description="Requests in flight at once (HTTP backends), on each endpoint of base_url.",
    )
    failover: FailoverConfig = Field(
        default_factory=FailoverConfig,
        description="Several endpoints: when one is taken out of service and tried again "
        "(timing only, not part of any key).",
    )
    max_retries: int = Field(
        6, ge=0, description="Retries of a failed request (429, 5xx, timeouts, connection errors)."
    )
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Deadline of one HTTP request, from sending it to the last byte of the "
        "answer (each retry gets its own).",
    )
    temperature: float | None = Field(
        None, ge=0, description="Sampling temperature; None keeps the backend default."
    )
    top_p: float | None = Field(
        None, gt=0, le=1, description="Nucleus sampling; None keeps the backend default."
    )
    max_tokens: int = Field(256, ge=1, description="Maximum tokens of one answer.")
    seed: int | None = Field(None, description="Sampling seed passed to backends that accept one.")
    device: str = Field(
        "auto",
        description="'transformers': auto (cuda when available), cpu, cuda, cuda:1, ... "
        "('vllm' places itself: choose GPUs with CUDA_VISIBLE_DEVICES).",
    )
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="Model weights dtype."
    )
    batch_size: BatchSize = Field(
        AUTO,
        description="'transformers': prompts per generate() call; 'auto': 8 on the CPU, on a GPU as "
        "many as the free memory holds the KV cache of (halved and remembered on out of memory).",
    )
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="'vllm': extra keyword arguments of vllm.LLM(...)."
    )
    vllm: VLLMEngineConfig = Field(
        default_factory=VLLMEngineConfig,
        description="'vllm': engine scheduling and memory (speed only, not part of any key).",
    )
    circuit_breaker: CircuitBreakerConfig | None = Field(
        default_factory=CircuitBreakerConfig,
        description="HTTP backends: stop generation when the endpoints fail most requests; "
        "null: never stop.",
    )
    batch: BatchAPIConfig = Field(
        default_factory=BatchAPIConfig,
        description="'openai-batch': polling and waiting (timing only, not part of any key).",
    )
    price: PriceConfig = Field(
        default_factory=PriceConfig,
        description="'openai', 'openai-batch': prices for the dry run's cost estimate.",
    )

    @field_validator("base_url")
    @classmethod
    def _endpoints(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None or value == "":
            return value
        urls = [value] if isinstance(value, str) else value
        problem = base_url_problem(urls)
        if problem:
            raise ValueError(problem)
        return urls[0] if len(urls) == 1 else urls  # a list of one is that URL, in every way

    @model_validator(mode="after")
    def _one_endpoint_for_batches(self) -> LLMConfig:
        if self.backend == "openai-batch" and isinstance(self.base_url, list):
            raise ValueError(
                f"backend 'openai-batch' submits to one endpoint: llm.base_url lists "
                f"{len(self.base_url)}; give one URL (or use 'openai-compatible' for several)"
            )
        return self

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, name: str) -> str:
        if not _VARIABLE_NAME.fullmatch(name):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, _), e.g. "
                "OPENAI_API_KEY, not the key itself: export the key in that variable"
            )
        return name

    @model_validator(mode="after")
    def _endpoint(self) -> LLMConfig:
        if self.backend == "openai-compatible" and not self.base_url:
            raise ValueError("llm.base_url is required for backend 'openai-compatible'")
        http = self.backend in ("openai", "openai-compatible", "openai-batch")
        if http and self.temperature is not None and self.temperature > OPENAI_MAX_TEMPERATURE:
            raise ValueError(
                f"llm.temperature {self.temperature} is above {OPENAI_MAX_TEMPERATURE:g}, which the "
                "OpenAI chat API rejects (0 to 2)"
            )
        return self

    def api_key(self) -> SecretStr | None:
        """The API key from the environment, or None when the variable is unset."""
        value = os.environ.get(self.api_key_env)
        return SecretStr(value) if value else None


class CleaningConfig(StrictModel):
    """Validation of LLM answers; a rejected answer goes to rejects.parquet with its reason."""

    min_length_ratio: float = Field(
        0.25,
        gt=0,
        description="Reject a sentence view shorter than this × the input's length (in words).",
    )
    max_length_ratio: float = Field(
        3.0,
        gt=0,
        description="Reject a sentence view longer than this × the input's length (in words).",
    )
    knowledge_max_sentences: int = Field(
        4,
        ge=1,
        description="SKICSE asks for at most four sentences; longer knowledge is cut to this many.",
    )
    extra_refusal_patterns: list[str] = Field(
        default_factory=list,
        description="More regular expressions that mark an answer as a refusal.",
    )
    prompt_echo_max_overlap: float | None = Field(
        0.5,
        gt=0,
        le=1,
        description="Reject an answer as 'prompt_echo' when at least this share of its word "
        "5-grams appear in the prompt's instructions or examples but not in the input sentence "
        "(an answer of fewer than 5 words: when it repeats a whole line of the prompt); "
        "null: no check.",
    )


SPACY_COMPONENTS_NOT_NEEDED: tuple[str, ...] = (
    "ner",
    "entity_ruler",
    "entity_linker",
    "textcat",
    "textcat_multilabel",
    "spancat",
    "span_finder",
    "senter",
)
"""spaCy components negation never reads: excluded when the pipeline is loaded."""


class NegationConfig(StrictModel):
    """OssCSE negation insertion at the dependency root (section 4, Step 1)."""

    spacy_model: str = Field("en_core_web_sm", description="Installed spaCy pipeline name or path.")
    batch_size: int = Field(256, ge=1, description="Sentences per nlp.pipe batch.")
    n_process: int = Field(1, ge=1, description="Processes of nlp.pipe.")
    exclude: list[str] = Field(
        default_factory=lambda: list(SPACY_COMPONENTS_NOT_NEEDED),
        description="Pipeline components not loaded: the rules need only tags, the parse and lemmas.",
    )


class BacktranslationConfig(StrictModel):
    """OssCSE back-translation with an MER filter (section 4, Step 2; appendix A)."""

    pivots: dict[str, tuple[str, str]] = Field(
        default_factory=lambda: {
            "de": ("facebook/wmt19-en-de", "facebook/wmt19-de-en"),
            "ru": ("facebook/wmt19-en-ru", "facebook/wmt19-ru-en"),
        },
        description="Pivot language -> (forward model, backward model), names or paths.",
    )
    mer_range: tuple[float, float] = Field(
        (0.15, 0.6), description="Keep a candidate whose MER lies in this closed range."
    )
    prefer: Literal["higher_mer", "lower_mer", "first_pivot"] = Field(
        "higher_mer", description="Which qualifying pivot to keep when several qualify."
    )
    num_beams: int = Field(5, ge=1, description="Beams of each translation.")
    batch_size: BatchSize = Field(
        AUTO,
        description="Sentences per generate() call (length-sorted); 'auto': 32 on the CPU, on a GPU "
        "as many as the free memory holds (halved and remembered on out of memory).",
    )
    max_new_tokens: int = Field(256, ge=1, description="Maximum tokens of one translation.")
    max_length_ratio: float | None = Field(
        2.0,
        gt=0,
        description="Also cap a batch's translations at this x its longest source (tokens) + 8, so a "
        "degenerate beam cannot run a batch of short sentences to max_new_tokens; null: no cap.",
    )
    device: str = Field("auto", description="auto, cpu, cuda, ...")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="'auto': float16 on GPU, float32 on CPU."
    )

    @model_validator(mode="after")
    def _range(self) -> BacktranslationConfig:
        low, high = self.mer_range
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(
                f"backtranslation.mer_range {list(self.mer_range)} must be [low, high] with 0 <= low <= high <= 1"
            )
        if not self.pivots:
            raise ValueError("backtranslation.pivots is empty; give at least one pivot, e.g. de")
        return self


class SynonymGenerationConfig(StrictModel):
    """Decoding of a synonym generator: beam search with sampling (VAEGPT-Sim, appendix A.1)."""

    num_beams: int = Field(3, ge=1, description="Beams of beam search (the paper uses 3).")
    do_sample: bool = Field(
        True, description="Sample within beam search (the paper's 'Beam Search with Sampling')."
    )
    no_repeat_ngram_size: int = Field(
        4, ge=0, description="Block repeated n-grams of this size (the paper uses 4; 0: off)."
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature.")
    top_k: int = Field(50, ge=0, description="Sample among the k most likely tokens (0: no limit).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (1.0: off).")
    max_new_tokens: int = Field(64, ge=1, description="Maximum tokens of one generated sentence.")
    max_source_tokens: int = Field(
        128, ge=1, description="Source sentences are cut to this many tokens."
    )
    batch_size: int = Field(
        32, ge=1, description="Source sentences per generate() call (length-sorted)."
    )
    seed: int = Field(
        0, description="Seed of the sampling; each batch is seeded from it and its sentences."
    )
    device: str = Field("auto", description="auto (cuda when available), cpu, cuda, cuda:1, ...")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="Weights dtype at generation; 'auto': float16 on GPU, float32 on CPU."
    )


GENERATE_CSE_METHODS: tuple[str, ...] = ("shuffle", "cutoff", "dropout", "repetition", "generator")
"""The Generate-CSE random-selection methods (section 3.2, appendix A.1)."""


class GenerateCSEConfig(StrictModel):
    """VAEGPT-Sim generator and Generate-CSE random selection (section 3.2, appendix A.1)."""

    generator: str | None = Field(
        None,
        description="Path of a trained VAEGPT-Sim generator; None leaves the generator out of the draw.",
    )
    views: int = Field(1, ge=1, description="Views per sentence (one per training epoch).")
    seed: int = Field(0, description="Seed of the random selection.")
    probabilities: dict[str, float] = Field(
        default_factory=lambda: {
            "shuffle": 0.2,
            "cutoff": 0.2,
            "dropout": 0.2,
            "repetition": 0.2,
            "generator": 0.2,
        },
        description="Probability of each method (shuffle, cutoff, dropout, repetition, generator); "
        "renormalised over the methods available.",
    )
    dropout_rate: float = Field(
        0.1, ge=0, lt=1, description="Token dropout: chance that each word is deleted."
    )
    generation: SynonymGenerationConfig = Field(
        default_factory=SynonymGenerationConfig, description="Decoding of the generator."
    )

    @model_validator(mode="after")
    def _known_methods(self) -> GenerateCSEConfig:
        unknown = sorted(set(self.probabilities) - set(GENERATE_CSE_METHODS))
        if unknown:
            raise ValueError(
                f"generate_cse.probabilities: unknown method(s) {unknown}; use {list(GENERATE_CSE_METHODS)}"
            )
        negative = {k: v for k, v in self.probabilities.items() if v < 0}
        if negative:
            raise ValueError(f"generate_cse.probabilities must not be negative: {negative}")
        usable = {k: v for k, v in self.probabilities.items() if v > 0}
        if self.generator is None:
            usable.pop("generator", None)
        if not usable:
            raise ValueError(
                "generate_cse.probabilities gives no available method a positive probability "
                "(the generator counts only when generate_cse.generator is set)"
            )
        return self


MINILM_REVISION = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
"""The hub commit of sentence-transformers/all-MiniLM-L6-v2 the project pins (the one that also
carries the ONNX and OpenVINO exports); see :mod:`cseaug.encoders.minilm`."""


class DiagnosticsConfig(StrictModel):
    """Per-version diagnostics (docs/diagnostics.md): MER / cosine-similarity histograms,
    pattern-order checks, contamination with the STS / SICK evaluation sets."""

    enabled: bool = Field(True, description="Write diagnostics/ into every published version.")
    encoder: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="Sentence encoder for cosine similarity: 'sentence-transformers/all-MiniLM-L6-v2' "
        "(from the Hugging Face hub at encoder_revision, cached), another Hugging Face name such as "
        "'bert-base-uncased' (NGCSE's BERT-base [CLS]), or a local model directory.",
    )
    encoder_revision: str = Field(
        MINILM_REVISION,
        pattern=r"^[0-9a-f]{40}$",
        description="Hub commit of all-MiniLM-L6-v2 (the default encoder) that is loaded and cached.",
    )
    pooling: Literal["auto", "sentence_transformers", "cls"] = Field(
        "auto",
        description="'auto': the sentence-transformers pipeline when the model has one, else the "
        "last hidden state of [CLS] (NGCSE's choice); or force either.",
    )
    device: str = Field(
        "auto", description="Encoder device: auto (cuda when available), cpu, cuda, cuda:1, ..."
    )
    batch_size: int = Field(64, ge=1, description="Sentences per encoder forward pass.")
    max_seq_length: int | None = Field(
        None,
        ge=8,
        description="Truncate sentences to this many tokens (None: the model's own limit).",
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        description="torch.set_num_threads for encoding on CPU (1 was fastest on 2 vCPUs), also ONNX "
        "Runtime's threads; None keeps the runtime's default.",
    )
    publish_threads: Annotated[int, Field(ge=1)] | Literal["all"] | None = Field(
        "all",
        description="Threads of the torch encoder once generation is over and publishing waits for "
        "it (the encoder runs in a worker process with torch_threads while the LLM generates): "
        "'all' (every core this process may use: diagnostics 1.6x faster on the 2-vCPU machine "
        "when the build had it to itself), a number, or None (keep torch_threads: better on a "
        "machine shared with other heavy work, docs/performance.md). ONNX Runtime keeps "
        "torch_threads.",
    )
    runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description="'auto': ONNX Runtime (no torch import: loads in under a second; the same vectors, "
        "embedded at ~0.9x torch's speed) for a "
        "sentence-transformers model with onnx/model.onnx and mean pooling on the CPU when the "
        "precision is float32 (a CPU with native bfloat16 runs torch's faster bfloat16), else torch; "
        "or force 'torch' / 'onnx'.",
    )
    precision: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="Number format of the cosine-similarity encoder: 'auto' is bfloat16 on a CPU with "
        "native bfloat16 (AMX-BF16 / AVX512-BF16: ~2x faster, cosine within ~0.002, "
        "benchmarks/bench_encoder_precision.py) and float32 elsewhere; or force 'float32', "
        "'bfloat16', 'float16' (GPU only). The pattern filter always uses float32.",
    )
    embedding_cache: bool = Field(
        True,
        description="Keep embeddings on disk under <work_dir>/cache/embeddings (sqlite, one file per "
        "encoder), keyed by a hash of the text, so reruns and repeated anchors are embedded once.",
    )
    cs_sample: int | None = Field(
        3_000,
        ge=1,
        description="Compute cosine similarity on a seeded sample of at most this many rows with views "
        "(None: all rows; MER is always computed on all rows). 3,000 rows keep the 95th percentile "
        "error of each view's quartiles under half a 0.025 histogram bin "
        "(benchmarks/bench_cs_sample.py, docs/performance.md); ~1 min on 2 CPU cores.",
    )
    seed: int = Field(0, description="Seed of the cosine-similarity sample.")
    mer_bins: int = Field(
        40, ge=2, le=1000, description="Histogram bins of MER over [0, 1] (shared by every panel)."
    )
    cs_bins: int = Field(
        80,
        ge=2,
        le=2000,
        description="Histogram bins of cosine similarity over [-1, 1] (shared by every panel).",
    )
    bands: dict[Literal["mer", "cs"], list[tuple[float, float]]] = Field(
        default_factory=lambda: {"mer": [(0.15, 0.6)], "cs": [(0.5, 1.0)]},
        description="Closed intervals whose share of values is reported per view, e.g. OssCSE's "
        "back-translation MER range [0.15, 0.6].",
    )
    pattern_filter: Literal["off", "mer", "cs", "both"] = Field(
        "off",
        description="Drop rows whose views break the order positive > intermediate > negative in "
        "similarity (CS falls, MER rises) to rejects with reason 'pattern_order'; 'off' only reports it.",
    )
    eval_data_dir: str | None = Field(
        None,
        description="Directory holding the evaluation sets for the contamination check (layout of "
        "shared/data: senteval_sts/STS1x-en-test, senteval_sts/STSBenchmark or stsbenchmark, sick); "
        "None skips the check.",
    )
    contamination_fields: Literal["anchor", "any"] = Field(
        "any",
        description="Which texts count for contamination: the anchor only, or the anchor and every view.",
    )
    remove_contaminated: bool = Field(
        False,
        description="Drop contaminated rows to rejects with reason 'contamination' (needs eval_data_dir); "
        "False only reports them.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> DiagnosticsConfig:
        for metric, intervals in self.bands.items():
            for low, high in intervals:
                if low > high:
                    raise ValueError(
                        f"diagnostics.bands.{metric}: interval ({low}, {high}) has low > high"
                    )
        if self.remove_contaminated and not self.eval_data_dir:
            raise ValueError("diagnostics.remove_contaminated needs diagnostics.eval_data_dir")
        return self


HELDOUT_FRACTIONS: dict[str, float] = {"sts": 0.1, "nli": 0.1}
"""Held-out share per method when ``output.heldout_fraction`` is not set: NGCSE holds out 10%
for its RFD analysis (appendix, "Training Details"); OssCSE, SKICSE and VAEGPT-Sim train on
every row (0 for every method not listed)."""


EXPORT_FORMATS: tuple[str, ...] = ("simcse", "ngcse", "sentence-transformers", "jsonl")
"""The export formats, in the one spelling :func:`normalize_export_format` returns."""


def normalize_export_format(fmt: str) -> str:
    """The one spelling of an export format: the config's ``sentence_transformers`` and the
    command line's ``sentence-transformers`` are one format, in any case.

    Raises:
        ValueError: an unknown format, with the known ones.

    Example:
        >>> normalize_export_format("sentence_transformers"), normalize_export_format("SimCSE")
        ('sentence-transformers', 'simcse')
    """
    value = fmt.strip().lower().replace("_", "-")
    if value not in EXPORT_FORMATS:
        raise ValueError(
            f"unknown export format '{fmt}'; formats: {', '.join(EXPORT_FORMATS)} "
            "(sentence_transformers is accepted too)"
        )
    return value


class ExportConfig(StrictModel):
    """One export written after publishing (docs/dataset-contract.md, "Exports")."""

    format: str = Field(
        description="simcse (CSV), ngcse (JSONL), sentence-transformers (Parquet; "
        "sentence_transformers is the same) or jsonl (every view of every row)."
    )
    layout: Literal["auto", "pair", "triplet", "quadruplet", "hybrid"] = Field(
        "auto",
        description="SimCSE / sentence-transformers layout; 'hybrid' (sentence-transformers) keeps "
        "every row: aigen rows with their views, the rest as (x, x) pairs.",
    )

    @model_validator(mode="before")
    @classmethod
    def _format_name_alone(cls, value: Any) -> Any:
        return {"format": value} if isinstance(value, str) else value

    @field_validator("format")
    @classmethod
    def _known_format(cls, fmt: str) -> str:
        return normalize_export_format(fmt)


class OutputConfig(StrictModel):
    """Where and how the version is published."""

    root: str = Field(
        "storage",
        description="Output root; datasets go to <root>/datasets/<name>/<version>. A local "
        "directory or an fsspec URI (s3://bucket/prefix with cseaug[s3], gs://..., memory://...); "
        "endpoint and credentials of a URI come from the environment (docs/deployment.md).",
    )
    dataset_name: str | None = Field(
        None, description="Dataset name; defaults to the config's name."
    )
    heldout_fraction: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="Deterministic share of rows flagged heldout; None: the method's default "
        "(0.1 for NGCSE's sts and nli, 0 for the others), see RunConfig.heldout_fraction.",
    )
    rows_per_file: int = Field(200_000, ge=1, description="Rows per Parquet data file.")
    exports: list[ExportConfig] = Field(
        default_factory=list,
        description="Exports written beside the version after publishing: a format name, or "
        "{format, layout}.",
    )
    force_new_version: bool = Field(
        False,
        description="Publish a new version even when its data fingerprint equals the latest "
        "version's (by default such a rebuild publishes nothing and reports that version).",
    )

    @field_validator("root")
    @classmethod
    def _known_storage(cls, root: str) -> str:
        try:
            return check_root(root)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("dataset_name")
    @classmethod
    def _plain_dataset_name(cls, name: str | None) -> str | None:
        problem = dataset_name_problem(name) if name is not None else None
        if problem:
            raise ValueError(problem)
        return name


class PublishConfig(StrictModel):
    """When a finished build may publish (docs/prefect.md, "The publish gate"); not part of
    the fingerprint: it decides whether data is published, not what the data is."""

    min_generated_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="LLM methods (sts, nli, ski) publish only when at least this share of the "
        "sampled anchors got generated views; every method needs at least one (0: no gate).",
    )
    min_pattern_share: float = Field(
        0.7,
        ge=0,
        le=1,
        description="NGCSE builds (sts, nli) publish only when at least this share of the "
        "generated rows keep the graded order (cosine similarity to the anchor: positive > "
        "intermediate > negative) with the diagnostics encoder; human-written data keep it "
        "in 88-94% (docs/quality.md, 'The quality gate'); 0: no gate.",
    )


class JudgeConfig(StrictModel):
    """The optional LLM judge (docs/quality.md, "The LLM judge"): a model scores each generated
    row's views against the method's definition, and rows scoring below ``min_score`` are
    rejected. Part of the fingerprint: its answers decide which rows a version holds."""

    llm: LLMConfig | None = Field(
        None,
        description="The judge model, any backend (same keys as the llm section); null: the "
        "build's llm section (the generating model judges its own views).",
    )
    min_score: int = Field(
        3,
        ge=1,
        le=5,
        description="Reject a row when the judge scores any of its views below this (1 to 5).",
    )


class QualityConfig(StrictModel):
    """Checks of what a build generated (docs/quality.md): the per-row checks, after the stage
    of every method (a failing row goes to rejects.parquet, stage ``quality``, and its anchor
    becomes an ``other`` row; thresholds measured on real sentences), and the LLM judge."""

    identical_views: bool = Field(
        True,
        description="Reject a row whose views are equal to each other after case-folding and "
        "removing punctuation and extra spaces ('identical_views').",
    )
    unchanged_view_similarity: float | None = Field(
        0.95,
        gt=0,
        le=1,
        description="Reject a row whose view that must change the anchor (NGCSE intermediate and "
        "negative, SKICSE knowledge) has at least this normalised edit similarity to the anchor "
        "('unchanged_view'); null: no check.",
    )
    language_confidence: float | None = Field(
        0.8,
        gt=0,
        le=1,
        description="Reject a row when the language identifier (py3langid) puts the anchor and "
        "one of its views, each with at least this probability, in different languages "
        "('wrong_language'); null: no check.",
    )
    hidden_text: bool = Field(
        True,
        description="Reject a row with a view that holds invisible characters "
        "('invisible_characters') or instructions to a model: tag characters, a chat special "
        "token, 'ignore the previous instructions' ('hidden_instructions').",
    )
    within_max_tokens: bool = Field(
        True,
        description="Reject a row with an LLM view of more words than llm.max_tokens allows "
        "('too_long'): the server did not stop where it was asked to.",
    )
    judge: JudgeConfig | None = Field(
        None,
        description="The LLM judge, for methods sts, nli and ski; null (default): no judge. "
        "`{}` turns it on with the build's llm section.",
    )


class RunnerConfig(StrictModel):
    """Where the shards of a build run: this process, or Prefect's Dask or Ray task runner
    (docs/scaling.md, "Running on Dask or Ray"). ``runner: dask`` alone is short for
    ``runner: {kind: dask}``: a local cluster of ``workers`` processes."""

    kind: Literal["local", "dask", "ray"] = Field(
        "local",
        description="local: every shard in the flow's process, one after another; dask / ray: "
        "each shard a Prefect task on a Dask or Ray cluster (extras 'dask', 'ray').",
    )
    address: str | None = Field(
        None,
        description="Address of an existing cluster (Dask scheduler tcp://host:8786, Ray "
        "ray://host:10001); None: a local cluster started for the build.",
    )
    workers: int = Field(
        2, ge=1, description="Worker processes of the local cluster (not used with an address)."
    )

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _address_needs_a_cluster(self) -> RunnerConfig:
        if self.address and self.kind == "local":
            raise ValueError("execution.runner.address needs kind dask or ray")
        return self


class ExecutionConfig(StrictModel):
    """How the work is cut and run; does not change the data, so not part of the fingerprint."""

    shard_size: int = Field(
        5_000, ge=100, le=100_000, description="Sentences per Prefect task (one task per shard)."
    )
    dry_run: bool = Field(False, description="Count requests and tokens, publish nothing.")
    cache_path: str | None = Field(
        None, description="LLM response cache; default <work_dir>/cache/llm.sqlite."
    )
    work_dir: str | None = Field(
        None,
        description="Local directory for the run store, the LLM and embedding caches, staging "
        "and local copies of versions; default output.root when it is local, else "
        "$XDG_CACHE_HOME/cseaug/roots/<protocol>/<path> (an object store holds no SQLite).",
    )
    runner: RunnerConfig = Field(
        default_factory=RunnerConfig,
        description="Where the shards run: local, dask or ray (a local cluster, or the one at "
        "runner.address).",
    )


class RunConfig(StrictModel):
    """A whole build: corpus -> sample -> views -> published version."""

    name: str = Field(description="Name of the setting, e.g. 'wiki-sts'; the default dataset name.")
    description: str = Field("", description="One line shown in the dataset card.")
    method: Method = Field(
        description="How aigen rows get their views: sts, nli, ski, osscse, generate_cse."
    )
    corpus: CorpusConfig
    sample: SampleConfig = Field(default_factory=SampleConfig)
    patterns: PatternConfig | None = Field(None, description="Required for methods sts and nli.")
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    llm: LLMConfig | None = Field(None, description="Required for methods sts, nli and ski.")
    cleaning: CleaningConfig = Field(default_factory=CleaningConfig)
    negation: NegationConfig = Field(default_factory=NegationConfig)
    backtranslation: BacktranslationConfig = Field(default_factory=BacktranslationConfig)
    generate_cse: GenerateCSEConfig = Field(default_factory=GenerateCSEConfig)
    diagnostics: DiagnosticsConfig = Field(default_factory=DiagnosticsConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    publish: PublishConfig = Field(default_factory=PublishConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        # the default dataset name: checked here, before any work, not at publish time
        problem = dataset_name_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @model_validator(mode="after")
    def _sections_for_method(self) -> RunConfig:
        if self.method in PATTERN_METHODS and self.patterns is None:
            raise ValueError(
                f"method '{self.method}' needs a 'patterns' section (the pattern source)"
            )
        if self.method in LLM_METHODS and self.llm is None:
            raise ValueError(f"method '{self.method}' needs an 'llm' section")
        if self.patterns is not None and self.method in PATTERN_METHODS:
            nli_sources = {"nli_csv", "snli_senteval"}
            sts_sources = {"sts12", "sts_table"}
            wrong = nli_sources if self.method == "sts" else sts_sources
            if self.patterns.source in wrong:
                raise ValueError(
                    f"patterns.source '{self.patterns.source}' gives {'NLI' if self.method == 'sts' else 'STS'} "
                    f"examples but method is '{self.method}'"
                )
        return self

    @model_validator(mode="after")
    def _runner_fits_the_build(self) -> RunConfig:
        runner = self.execution.runner
        uses_llm = self.method in LLM_METHODS and self.llm is not None
        if runner.kind != "local" and uses_llm and self.llm.backend == "vllm":
            raise ValueError(
                f"execution.runner {runner.kind} would start one vLLM engine per worker and shard; "
                "serve the model with `vllm serve` and use llm.backend openai-compatible, or "
                "runner local"
            )
        if runner.address and uses_llm and self.execution.cache_path is None:
            raise ValueError(
                "execution.runner.address: the workers of a remote cluster share output.root, "
                "and the LLM cache (SQLite) must not sit on a network file system; set "
                "execution.cache_path to a path on each machine's local disk"
            )
        return self

    @model_validator(mode="after")
    def _judge_fits_the_build(self) -> RunConfig:
        judge = self.judge_llm
        if self.quality.judge is not None and judge is None:
            raise ValueError(
                f"quality.judge scores views that an LLM wrote (methods sts, nli, ski); method "
                f"'{self.method}' writes its views without one: remove quality.judge"
            )
        if judge is None or judge.backend != "vllm":
            return self
        if self.llm is not None and self.llm.backend == "vllm":
            raise ValueError(
                "quality.judge would start a second vLLM engine in this process beside llm's; "
                "serve the model(s) with `vllm serve` and use backend openai-compatible"
            )
        if self.execution.runner.kind != "local":
            raise ValueError(
                f"execution.runner {self.execution.runner.kind} would start one vLLM judge engine "
                "per worker and shard; serve the judge with `vllm serve` and use "
                "quality.judge.llm.backend openai-compatible, or runner local"
            )
        return self

    @property
    def judge_llm(self) -> LLMConfig | None:
        """The LLM judge's model (``quality.judge.llm``, else the build's ``llm``); None when
        there is no judge or the method has no LLM."""
        if self.quality.judge is None or self.method not in LLM_METHODS:
            return None
        return self.quality.judge.llm or self.llm

    @property
    def dataset_name(self) -> str:
        return self.output.dataset_name or self.name

    @property
    def heldout_fraction(self) -> float:
        """``output.heldout_fraction``, or the method's default (:data:`HELDOUT_FRACTIONS`)."""
        if self.output.heldout_fraction is not None:
            return self.output.heldout_fraction
        return HELDOUT_FRACTIONS.get(self.method, 0.0)

    @property
    def work_dir(self) -> Path:
        """The local directory of the run store and caches (:func:`cseaug.roots.work_dir`)."""
        return work_dir(self.output.root, self.execution.work_dir)

    @property
    def cache_path(self) -> Path:
        return Path(self.execution.cache_path or self.work_dir / "cache" / "llm.sqlite")


def redacted(data: Any) -> Any:
    """A copy of a config dump with every value under a secret-looking key masked
    (:func:`cseaug.secrets.is_secret_name`).

    ``api_key_env`` names a variable, not a secret, and is kept; so is ``max_tokens``.

    Example:
        >>> redacted({"llm": {"api_key": "sk-1", "api_key_env": "OPENAI_API_KEY", "max_tokens": 9}})
        {'llm': {'api_key': '***', 'api_key_env': 'OPENAI_API_KEY', 'max_tokens': 9}}
    """
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            secret = is_secret_name(str(key))
            out[key] = "***" if secret and value not in (None, "") else redacted(value)
        return out
    if isinstance(data, list):
        return [redacted(v) for v in data]
    return data


def _data_changing_diagnostics(diag: DiagnosticsConfig) -> dict[str, Any]:
    """The diagnostics settings that filter rows (reports alone do not change the data)."""
    out: dict[str, Any] = {}
    if diag.remove_contaminated:
        out.update(eval_data_dir=diag.eval_data_dir, contamination_fields=diag.contamination_fields)
    if diag.pattern_filter != "off":
        out["pattern_filter"] = diag.pattern_filter
        if diag.pattern_filter in ("cs", "both"):
            out.update(
                encoder=diag.encoder,
                encoder_revision=diag.encoder_revision,
                pooling=diag.pooling,
                max_seq_length=diag.max_seq_length,
            )
    return out


def _drop_timing(llm: dict[str, Any] | None) -> None:
    """Drop from an ``llm`` section's dump what decides how fast or when, not what is asked."""
    if llm is not None:
        llm.pop("vllm")  # engine scheduling: how fast, not what is asked
        llm.pop("circuit_breaker")  # when to stop sending, not what is asked
        llm.pop("batch")  # Batch API polling: when answers come, not what is asked
        llm.pop("price")  # the dry run's cost estimate
        llm.pop("failover")  # when an endpoint is tried again, not what is asked


def config_fingerprint(cfg: RunConfig) -> str:
    """sha256 of everything in the config that changes the data (not ``execution``, ``publish``,
    ``output.root`` nor the vLLM engine's scheduling settings ``llm.vllm``, the Batch API's
    polling ``llm.batch``, the prices ``llm.price`` or the endpoints' failover timing
    ``llm.failover``, nor these settings of ``quality.judge.llm``). ``quality.judge`` (its model
    and ``min_score``) is part of it: the judge decides which rows are kept; a config without a
    judge has the fingerprint it had before the judge existed."""
    data = cfg.model_dump(mode="json", exclude={"execution", "publish"})
    _drop_timing(data["llm"])
    if data["quality"]["judge"] is None:  # no judge: the fingerprint of a build without one
        del data["quality"]["judge"]
    else:
        _drop_timing(data["quality"]["judge"]["llm"])
    if not data["quality"]:
        del data["quality"]
    data["output"].pop("root", None)
    data["output"].pop("exports", None)
    data["output"].pop("force_new_version", None)
    # the share actually held out, so an unset fraction and its explicit default agree
    data["output"]["heldout_fraction"] = cfg.heldout_fraction
    data["diagnostics"] = _data_changing_diagnostics(cfg.diagnostics)
    return json_sha256(data, ascii_only=True)


MAX_CONFIG_BYTES = 1_000_000
"""Largest config file read (a run config is a few KB)."""
MAX_CONFIG_VALUES = 100_000
"""Most values (mappings, lists and scalars, each YAML alias counted as what it expands to)
a config may hold with its overrides: a few hundred characters of nested aliases (an
"alias bomb") expand to billions, which validation would build in memory."""


def count_values(data: Any, source: str) -> int:
    """Values in ``data`` with every YAML alias expanded (an alias is the same Python object
    again), counted without expanding anything.

    Example:
        >>> inner = ["a", "b"]
        >>> count_values({"x": inner, "y": inner}, "c.yaml")
        7

    Raises:
        ConfigError: more than :data:`MAX_CONFIG_VALUES`, an alias inside its own anchor,
            or nesting too deep to walk.
    """
    sizes: dict[int, int] = {}
    walking: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in walking:
            raise ConfigError(f"config {source}: a YAML alias refers to its own anchor")
        walking.add(key)
        total = 1
        for child in node.values() if isinstance(node, dict) else node:
            total += size(child)
            if total > MAX_CONFIG_VALUES:
                raise ConfigError(
                    f"config {source} holds more than {MAX_CONFIG_VALUES:,} values once its "
                    "YAML aliases are expanded; a run config needs a few hundred"
                )
        walking.discard(key)
        sizes[key] = total
        return total

    try:
        return size(data)
    except RecursionError:
        raise ConfigError(f"config {source} is nested too deeply") from None


def safe_load_yaml(text: str) -> Any:
    """``yaml.safe_load``, with nesting too deep for the parser as a :class:`yaml.YAMLError`."""
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply") from None


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into its key path and a YAML-parsed value.

    Example:
        >>> parse_override("sample.size=500")
        (['sample', 'size'], 500)
    """
    if "=" not in item:
        raise ConfigError(
            f"override '{item}' is not of the form key.path=value (e.g. sample.size=500)"
        )
    key, raw = item.split("=", 1)
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise ConfigError(f"override '{item}' has an empty key")
    try:
        value = safe_load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override '{item}': value is not valid YAML ({exc})") from exc
    return path, value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``--set key.path=value`` overrides to a raw config mapping, creating sections as needed."""
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override '{item}': '{part}' is a value, not a section")
            node = child
        node[path[-1]] = value
    return data


def _section_models(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation holds (through ``X | None``, lists and dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None:
        return []
    args = typing.get_args(annotation)
    if origin is dict:
        args = args[1:]
    elif origin is typing.Annotated:
        args = args[:1]
    elif origin not in (list, tuple, typing.Union, types.UnionType):
        return []
    return [model for arg in args for model in _section_models(arg)]


def known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the section at ``loc`` (a path of keys and list indices) of ``model`` accepts.

    Example:
        >>> known_keys(RunConfig, ("sample",))
        ['size', 'seed', 'include_other']
    """
    models = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        models = [sub for f in fields for sub in _section_models(f.annotation)]
    return [name for m in models for name in m.model_fields]


def _did_you_mean(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> str:
    """``; did you mean 'x'?`` for an unknown key close to a known one, else the empty string."""
    if model is None or not loc or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], known_keys(model, loc[:-1]), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def format_validation_error(
    exc: ValidationError, source: str, model: type[BaseModel] | None = None
) -> str:
    """One line per problem, each naming the dotted key, for humans (one line in all for one
    problem). The rejected values are never repeated: they may be secrets. With ``model``,
    an unknown key gets the closest known key of its section as a "did you mean"."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key" + _did_you_mean(model, tuple(err["loc"]))
        problems.append(f"{where}: {message}")
    if len(problems) == 1:
        return f"invalid config {source}: {problems[0]}"
    return "\n".join([f"invalid config {source}:", *(f"  - {p}" for p in problems)])


ModelT = TypeVar("ModelT", bound=BaseModel)


def load_yaml_model(
    model: type[ModelT],
    path: str | Path | None,
    overrides: list[str] | None = None,
    what: str = "config",
) -> ModelT:
    """Read a YAML file (None: defaults only), apply ``key.path=value`` overrides, validate.

    Args:
        model: the pydantic model to validate against.
        path: the YAML file, or None for the model's defaults.
        overrides: e.g. ``["sample.size=500"]``.
        what: what the file is, for messages (``config``, ``training config``).

    Raises:
        ConfigError: the file is missing or unreadable, or a value is invalid; the message
            names every bad key.
    """
    data: dict[str, Any] = {}
    source = "(defaults)"
    if path is not None:
        path = Path(path)
        source = str(path)
        if not path.is_file():
            raise ConfigError(f"{what} file not found: {path}")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{what} {path} is {path.stat().st_size:,} bytes: at most {MAX_CONFIG_BYTES:,} "
                "(a config is a few KB)"
            )
        try:
            data = safe_load_yaml(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{what} {path} must be a mapping at the top level")
    data = apply_overrides(data, overrides or [])
    count_values(data, source)  # before validation copies every alias
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source, model)) from exc


def load_config(path: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Read a YAML run config, apply ``key.path=value`` overrides and validate it.

    Args:
        path: the YAML file.
        overrides: e.g. ``["sample.size=500", "llm.concurrency=8"]``.

    Raises:
        ConfigError: the file is missing or unreadable, or a value is invalid; the message
            names every bad key.

    Example:
        >>> load_config("configs/wiki-sts.yaml", ["sample.size=500"]).sample.size
        500
    """
    return load_yaml_model(RunConfig, path, overrides)
