"""Row filters a config can switch on after the stage: contamination and pattern order.

Both are steps over the checks of the diagnostics (:mod:`cseaug.diagnostics.contamination`,
:mod:`cseaug.diagnostics.patterns`), so a dropped row always lands in rejects with its
reason (``contamination``, ``pattern_order``). Filtered anchors are removed, not kept as
``other`` rows: a contaminated sentence must not stay in the data at all. Each filter owns
what it loaded (the evaluation-set index, the sentence encoder) and frees it on close.

Example:
    >>> from cseaug.config import DiagnosticsConfig
    >>> PatternOrderFilter.from_config(DiagnosticsConfig(pattern_filter="mer"), "storage/cache").metric
    'mer'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa

from cseaug.config import DiagnosticsConfig
from cseaug.diagnostics.contamination import EvalIndex, contamination_filter
from cseaug.diagnostics.patterns import pattern_order_filter
from cseaug.encoders.base import Encoder
from cseaug.step import Step, StepResult


@dataclass(eq=False)  # a step is a resource: compared and hashed by identity
class ContaminationFilter(Step):
    """Drops rows whose anchor (or, with ``any``, any view) is an evaluation sentence.

    Args:
        index: the evaluation sentences (:func:`cseaug.diagnostics.contamination.load_eval_index`).
        fields: ``anchor`` or ``any``.
    """

    index: EvalIndex
    fields: Literal["anchor", "any"] = "any"
    name = "contamination"

    def __call__(self, rows: pa.Table) -> StepResult:
        return contamination_filter(rows, self.index, self.fields)


@dataclass(eq=False)
class PatternOrderFilter(Step):
    """Drops rows whose views break the order positive > intermediate > negative.

    Args:
        metric: ``mer``, ``cs`` or ``both``.
        encoder: the sentence encoder (``cs`` and ``both`` need it); the filter owns it and
            closes it.
    """

    metric: Literal["mer", "cs", "both"]
    encoder: Encoder | None = None
    name = "pattern_order"

    @classmethod
    def from_config(cls, diag: DiagnosticsConfig, cache_dir: str | Path) -> PatternOrderFilter:
        """The filter of ``diagnostics.pattern_filter``, its encoder loaded (``cs``, ``both``).

        Args:
            diag: the ``diagnostics`` section (``pattern_filter`` is not ``off``).
            cache_dir: the encoder's embedding cache (``<work_dir>/cache/embeddings``).
        """
        metric = diag.pattern_filter
        encoder = None
        if metric in ("cs", "both"):
            from cseaug.encoders.loading import encoder_from_config

            # float32 whatever diagnostics.precision says: the filter decides which rows a
            # version holds, and that must not depend on the machine's number formats
            encoder = encoder_from_config(
                diag.model_copy(update={"precision": "float32"}), cache_dir
            )
        return cls(metric, encoder)

    def __call__(self, rows: pa.Table) -> StepResult:
        return pattern_order_filter(rows, self.metric, self.encoder)

    def close(self) -> None:
        """Free the encoder (model and embedding store)."""
        if self.encoder is not None:
            self.encoder.close()
            self.encoder = None
