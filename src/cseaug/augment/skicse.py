"""SKICSE: sentence knowable information (SKI) written by an LLM, the ``knowledge`` view.

SKICSE, section 3.1 "Prompt Template for SKI", gives x_ski for each sentence x. Unsupervised
rows (section 3.2.1) become pairs (x, x_ski); NLI rows that arrive with their entailment and
contradiction (section 3.2.2) keep them and gain ``knowledge``. A row whose knowledge failed
cleaning goes to rejects (stage ``llm``, view ``knowledge``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from cseaug.augment.llm_views import ViewJob, ViewStage, require_columns
from cseaug.config import CleaningConfig
from cseaug.errors import ConfigError
from cseaug.llm.base import LLMBackend
from cseaug.llm.clean import KNOWLEDGE_VIEW
from cseaug.prompts import PromptTemplate
from cseaug.step import StepResult

GIVEN = "given"
"""``positive_method`` / ``negative_method`` of a view that came with the input (NLI quadruplets)."""


def _methods(record: Mapping[str, Any]) -> dict[str, str | None]:
    """A SKI row's method columns: a given view keeps its method, else is ``given``."""
    methods: dict[str, str | None] = {"method": "ski"}
    for view in ("positive", "negative"):
        given = GIVEN if record.get(view) is not None else None
        methods[f"{view}_method"] = record.get(f"{view}_method") or given
    return methods


class SKIStage(ViewStage):
    """SKICSE knowledge for a shard of anchors (method ``ski``), asked of ``backend`` with
    ``prompts["knowledge"]``."""

    name = "ski"
    views = (KNOWLEDGE_VIEW,)

    def __init__(
        self, backend: LLMBackend, prompts: Mapping[str, PromptTemplate], cleaning: CleaningConfig
    ) -> None:
        if KNOWLEDGE_VIEW not in prompts:
            raise ConfigError(
                f"the SKI stage needs a '{KNOWLEDGE_VIEW}' prompt, got {sorted(prompts)}"
            )
        self.backend = backend
        self.prompts = {KNOWLEDGE_VIEW: prompts[KNOWLEDGE_VIEW]}
        self.cleaning = cleaning

    def __call__(self, rows: pa.Table) -> StepResult:
        require_columns(rows, ("id", "sentence"), self.name)
        records = rows.to_pylist()
        jobs = [
            ViewJob(
                r["id"],
                r["sentence"],
                KNOWLEDGE_VIEW,
                r["sentence"],
                self.prompts[KNOWLEDGE_VIEW].render(sentence=r["sentence"]),
            )
            for r in records
        ]
        knowledge = self.ask(jobs, "SKICSE knowledge")
        result = self.kept_rows(records, [knowledge], _methods, method="ski")
        kept = [r for r in records if (r["id"], KNOWLEDGE_VIEW) in knowledge.texts]
        result.stats["quadruplets"] = sum(
            None not in (r.get("positive"), r.get("negative")) for r in kept
        )
        return result
