"""The OssCSE stage: negation (Step 1) then back-translation (Step 2) of each anchor.

OssCSE section 4, "Data augmentation": a row needs both views, so the stage chains the two
steps, negation (cheap) first, so only negated anchors are back-translated (expensive); an
anchor that fails either goes to rejects (docs/osscse.md, "Rows of an OssCSE build").
"""

from __future__ import annotations

import pyarrow as pa

from cseaug.augment.backtranslate import BackTranslationStage
from cseaug.augment.negation import NegationStage
from cseaug.dataset.schema import SPLIT_AIGEN
from cseaug.step import Chain, StepResult

METHOD = "osscse"


class OssCSEStage(Chain):
    """Negation then back-translation of each anchor: rows with both views; closing the
    stage frees the translation models."""

    def __init__(self, negation: NegationStage, backtranslation: BackTranslationStage) -> None:
        super().__init__(METHOD, [negation, backtranslation])

    def __call__(self, rows: pa.Table) -> StepResult:
        result = super().__call__(rows)
        out = result.rows
        for column, value in (("split", SPLIT_AIGEN), ("method", METHOD)):
            index, field = out.schema.get_field_index(column), out.schema.field(column)
            out = out.set_column(index, field, pa.array([value] * out.num_rows, field.type))
        stats = {
            "stage": self.name,
            "rows_in": rows.num_rows,
            "rows_out": out.num_rows,
            "share_rows_out": round(out.num_rows / rows.num_rows, 4) if rows.num_rows else 0.0,
            **result.stats,
        }
        return StepResult(rows=out, rejects=result.rejects, stats=stats, details=result.details)
