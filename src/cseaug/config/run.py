"""The whole run config: every section, and the rules between them (which sections a method
needs, which runner fits which backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from cseaug.config.base import StrictModel
from cseaug.config.corpus import CorpusConfig, SampleConfig
from cseaug.config.diagnostics import DiagnosticsConfig
from cseaug.config.execution import ExecutionConfig
from cseaug.config.generate_cse import GenerateCSEConfig
from cseaug.config.generation import CleaningConfig, GenerationConfig
from cseaug.config.llm import LLMConfig
from cseaug.config.osscse import BacktranslationConfig, NegationConfig
from cseaug.config.output import DatasetName, OutputConfig
from cseaug.config.patterns import SOURCE_KIND, PatternConfig
from cseaug.config.publish import PublishConfig
from cseaug.config.quality import QualityConfig
from cseaug.roots import work_dir

Method = Literal["sts", "nli", "ski", "osscse", "generate_cse"]
"""How the ``aigen`` rows of a build get their views (the ``method`` column)."""

LLM_METHODS: frozenset[str] = frozenset({"sts", "nli", "ski"})
PATTERN_METHODS: frozenset[str] = frozenset({"sts", "nli"})

HELDOUT_FRACTIONS: dict[str, float] = {"sts": 0.1, "nli": 0.1}
"""Held-out share per method when ``output.heldout_fraction`` is not set: NGCSE holds out 10%
for its RFD analysis (appendix, "Training Details"); the other papers train on every row."""


class RunConfig(StrictModel):
    """A whole build: corpus -> sample -> views -> published version."""

    name: DatasetName = Field(
        description="Name of the setting, e.g. 'wiki-sts'; the default dataset name."
    )
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

    @model_validator(mode="after")
    def _sections_for_method(self) -> RunConfig:
        if self.method in PATTERN_METHODS and self.patterns is None:
            raise ValueError(
                f"method '{self.method}' needs a 'patterns' section (the pattern source)"
            )
        if self.method in LLM_METHODS and self.llm is None:
            raise ValueError(f"method '{self.method}' needs an 'llm' section")
        if self.patterns is not None and self.method in PATTERN_METHODS:
            kind = SOURCE_KIND.get(self.patterns.source, self.method)  # paper: both kinds
            if kind != self.method:
                raise ValueError(
                    f"patterns.source '{self.patterns.source}' gives {kind.upper()} "
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
