"""Run configuration: one pydantic model per section, assembled into :class:`RunConfig`; YAML
loading with ``--set`` overrides (:func:`load_config`); fingerprints. Every name is
re-exported here with the ``import X as X`` form (public to type checkers, PEP 484).

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

from cseaug.config.base import AUTO as AUTO
from cseaug.config.base import StrictModel as StrictModel
from cseaug.config.base import TrainingPrecision as TrainingPrecision
from cseaug.config.corpus import CorpusConfig as CorpusConfig
from cseaug.config.corpus import SampleConfig as SampleConfig
from cseaug.config.diagnostics import MINILM_REVISION as MINILM_REVISION
from cseaug.config.diagnostics import DiagnosticsConfig as DiagnosticsConfig
from cseaug.config.execution import RunnerConfig as RunnerConfig
from cseaug.config.fingerprint import config_fingerprint as config_fingerprint
from cseaug.config.fingerprint import redacted as redacted
from cseaug.config.generate_cse import GENERATE_CSE_METHODS as GENERATE_CSE_METHODS
from cseaug.config.generate_cse import GenerateCSEConfig as GenerateCSEConfig
from cseaug.config.generate_cse import SynonymGenerationConfig as SynonymGenerationConfig
from cseaug.config.generation import CleaningConfig as CleaningConfig
from cseaug.config.generation import GenerationConfig as GenerationConfig
from cseaug.config.llm import BatchAPIConfig as BatchAPIConfig
from cseaug.config.llm import FailoverConfig as FailoverConfig
from cseaug.config.llm import LLMConfig as LLMConfig
from cseaug.config.llm import PriceConfig as PriceConfig
from cseaug.config.llm import VLLMEngineConfig as VLLMEngineConfig
from cseaug.config.llm import base_url_problem as base_url_problem
from cseaug.config.loading import apply_overrides as apply_overrides
from cseaug.config.loading import edge_config as edge_config
from cseaug.config.loading import load_config as load_config
from cseaug.config.loading import load_yaml_model as load_yaml_model
from cseaug.config.loading import parse_override as parse_override
from cseaug.config.loading import validated as validated
from cseaug.config.osscse import SPACY_COMPONENTS_NOT_NEEDED as SPACY_COMPONENTS_NOT_NEEDED
from cseaug.config.osscse import BacktranslationConfig as BacktranslationConfig
from cseaug.config.osscse import NegationConfig as NegationConfig
from cseaug.config.output import DATASET_NAME_RE as DATASET_NAME_RE
from cseaug.config.output import ExportConfig as ExportConfig
from cseaug.config.output import ExportLayout as ExportLayout
from cseaug.config.output import dataset_name_problem as dataset_name_problem
from cseaug.config.output import normalize_export_format as normalize_export_format
from cseaug.config.patterns import PatternConfig as PatternConfig
from cseaug.config.quality import QualityConfig as QualityConfig
from cseaug.config.run import HELDOUT_FRACTIONS as HELDOUT_FRACTIONS
from cseaug.config.run import LLM_METHODS as LLM_METHODS
from cseaug.config.run import PATTERN_METHODS as PATTERN_METHODS
from cseaug.config.run import RunConfig as RunConfig
