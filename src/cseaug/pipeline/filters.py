"""Row filters a config can switch on after the stage: contamination and pattern order.

Both are steps over the checks of the diagnostics (:mod:`cseaug.diagnostics.contamination`,
:mod:`cseaug.diagnostics.patterns`), so a dropped row always lands in rejects with its
reason (``contamination``, ``pattern_order``). Filtered anchors are removed, not kept as
``other`` rows: a contaminated sentence must not stay in the data at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from cseaug.diagnostics.contamination import EvalIndex, contamination_filter
from cseaug.diagnostics.patterns import pattern_order_filter
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
        metric: ``mer``, ``cs`` or ``both`` (``cs`` and ``both`` read the ``cs_<view>``
            columns of the build's CS step, which measures every row for the filter).
    """

    metric: Literal["mer", "cs", "both"]
    name = "pattern_order"

    def __call__(self, rows: pa.Table) -> StepResult:
        return pattern_order_filter(rows, self.metric)
