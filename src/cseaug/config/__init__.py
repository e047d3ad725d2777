"""Run configuration: pydantic v2 models, YAML loading, ``--set`` overrides, fingerprints.

One YAML file describes one build (see ``configs/``). Every model forbids unknown keys,
so a typo fails before any work with the key's dotted path. Relative paths are resolved
against the current working directory (the repository root for the shipped configs and
the Prefect deployments). Secrets never live in a config: a config names the
environment variable that holds an API key (``llm.api_key_env``), and the key is read
from the environment only when a request is sent.

Each section has a module of its own (``config/llm.py`` holds the ``llm`` section, ...);
``config/run.py`` assembles them into :class:`RunConfig`, and :func:`load_config`
(``config/loading.py``) is the one entry point that reads and validates a whole config.
Every name is imported from here.

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

from cseaug.config.base import AUTO, BatchSize, StrictModel, TrainingPrecision
from cseaug.config.corpus import CorpusConfig, SampleConfig, ViewName
from cseaug.config.diagnostics import MINILM_REVISION, DiagnosticsConfig
from cseaug.config.execution import ExecutionConfig, RunnerConfig
from cseaug.config.fingerprint import config_fingerprint, redacted
from cseaug.config.generate_cse import (
    GENERATE_CSE_METHODS,
    GenerateCSEConfig,
    SynonymGenerationConfig,
)
from cseaug.config.generation import CleaningConfig, GenerationConfig
from cseaug.config.llm import (
    BatchAPIConfig,
    CircuitBreakerConfig,
    FailoverConfig,
    LLMConfig,
    PriceConfig,
    VLLMEngineConfig,
    base_url_problem,
)
from cseaug.config.loading import (
    apply_overrides,
    format_validation_error,
    load_config,
    load_yaml_model,
    parse_override,
    run_config,
    validated,
)
from cseaug.config.osscse import (
    SPACY_COMPONENTS_NOT_NEEDED,
    BacktranslationConfig,
    NegationConfig,
)
from cseaug.config.output import (
    DATASET_NAME_RE,
    EXPORT_FORMATS,
    ExportConfig,
    OutputConfig,
    dataset_name_problem,
    normalize_export_format,
)
from cseaug.config.patterns import PatternConfig
from cseaug.config.publish import PublishConfig
from cseaug.config.quality import JudgeConfig, QualityConfig
from cseaug.config.run import (
    HELDOUT_FRACTIONS,
    LLM_METHODS,
    PATTERN_METHODS,
    Method,
    RunConfig,
)

__all__ = [
    "AUTO",
    "DATASET_NAME_RE",
    "EXPORT_FORMATS",
    "GENERATE_CSE_METHODS",
    "HELDOUT_FRACTIONS",
    "LLM_METHODS",
    "MINILM_REVISION",
    "PATTERN_METHODS",
    "SPACY_COMPONENTS_NOT_NEEDED",
    "BacktranslationConfig",
    "BatchAPIConfig",
    "BatchSize",
    "CircuitBreakerConfig",
    "CleaningConfig",
    "CorpusConfig",
    "DiagnosticsConfig",
    "ExecutionConfig",
    "ExportConfig",
    "FailoverConfig",
    "GenerateCSEConfig",
    "GenerationConfig",
    "JudgeConfig",
    "LLMConfig",
    "Method",
    "NegationConfig",
    "OutputConfig",
    "PatternConfig",
    "PriceConfig",
    "PublishConfig",
    "QualityConfig",
    "RunConfig",
    "RunnerConfig",
    "SampleConfig",
    "StrictModel",
    "SynonymGenerationConfig",
    "TrainingPrecision",
    "VLLMEngineConfig",
    "ViewName",
    "apply_overrides",
    "base_url_problem",
    "config_fingerprint",
    "dataset_name_problem",
    "format_validation_error",
    "load_config",
    "load_yaml_model",
    "normalize_export_format",
    "parse_override",
    "redacted",
    "run_config",
    "validated",
]
