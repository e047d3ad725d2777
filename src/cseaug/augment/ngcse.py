"""NGCSE pattern simulation: an LLM writes positive / intermediate / negative views by example.

NGCSE ("Pattern Simulation with LLM"; prompts in the appendix "Details of the Prompt"):
method ``sts`` writes a similar s_i^p (STS score > 4), a sentence with fewer details s_i^m
(1–4) and a distinct s_i^n (< 1); method ``nli`` an entailment and a contradiction.
``generation.derive_from`` settles the paper's ambiguity about what the later views are
written from: ``input`` (every view of s_i in one round) or ``positive`` (s_i^p first, then
the other views of it). A row is kept only when every view passed cleaning; each failed view
goes to rejects (stage ``llm``) (docs/prompts-and-patterns.md, "Generation").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from cseaug.augment.llm_views import ViewJob, ViewStage, require_columns
from cseaug.config import CleaningConfig, GenerationConfig
from cseaug.errors import ConfigError
from cseaug.llm.base import LLMBackend
from cseaug.patterns import LEVELS, ExampleSet
from cseaug.prompts import PromptTemplate
from cseaug.step import StepResult

GENERATED_BY = "llm"
"""Value of ``positive_method`` / ``negative_method`` on rows this stage writes."""


class PatternSimulationStage(ViewStage):
    """NGCSE views for a shard of anchors (``method`` ``sts`` or ``nli``), asked of
    ``backend`` with the run's fixed ``examples`` and a prompt per view."""

    name = "pattern_sim"
    stop = ("\n",)  # every view is one sentence: an answer ends at its first line break

    def __init__(
        self,
        method: str,
        backend: LLMBackend,
        examples: ExampleSet,
        prompts: Mapping[str, PromptTemplate],
        cleaning: CleaningConfig,
        generation: GenerationConfig,
    ) -> None:
        if examples.kind != method:  # an example set is sts or nli: so is the method
            raise ConfigError(
                f"examples are {examples.kind.upper()} patterns but the method is {method!r}"
            )
        self.views: tuple[str, ...] = LEVELS[method]
        missing = [v for v in self.views if v not in prompts or v not in examples.levels]
        if missing:
            raise ConfigError(
                f"method {method!r} needs a prompt and examples for view(s) {missing}"
            )
        self.method = method
        self.backend = backend
        self.examples = examples
        self.prompts = dict(prompts)
        self.cleaning = cleaning
        self.derive_from = generation.derive_from

    def _job(self, row: Mapping[str, Any], view: str, source: str) -> ViewJob:
        messages = self.prompts[view].render(examples=self.examples.levels[view], sentence=source)
        return ViewJob(row["id"], row["sentence"], view, source, messages)

    def __call__(self, rows: pa.Table) -> StepResult:
        require_columns(rows, ("id", "sentence"), self.name)
        records = rows.to_pylist()
        label = f"NGCSE {self.method}"
        if self.derive_from == "input":
            jobs = [self._job(r, view, r["sentence"]) for r in records for view in self.views]
            rounds = [self.ask(jobs, f"{label} views")]
        else:
            positives = [self._job(r, "positive", r["sentence"]) for r in records]
            first = self.ask(positives, f"{label} positives")
            derived = [
                self._job(r, view, first.texts[(r["id"], "positive")])
                for r in records
                if (r["id"], "positive") in first.texts
                for view in self.views[1:]
            ]
            rounds = [first, self.ask(derived, f"{label} views from positives")]

        methods = {
            "method": self.method,
            "positive_method": GENERATED_BY,
            "negative_method": GENERATED_BY,
        }
        return self.kept_rows(
            records, rounds, lambda _: methods, method=self.method, derive_from=self.derive_from
        )
