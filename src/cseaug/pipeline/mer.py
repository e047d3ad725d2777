"""The MER step: every ``mer_<view>`` column of the rows, computed once, last in the build.

Stages write views, not their MER; this step, the last of every row pipeline of a build
(generated rows, demoted rows, ``other`` rows), fills ``mer_<view>`` for each view column
from :func:`cseaug.metrics.mer.mer_pairs` (float32; null where the view is null). The
writer publishes what it gets and computes nothing.

Example:
    >>> from cseaug.dataset.schema import rows_table
    >>> rows = rows_table([{"id": "a", "sentence": "Bryan Cranston will return.",
    ...                     "negative": "Bryan Cranston will not return", "split": "aigen"}])
    >>> out = MERStep()(rows).rows
    >>> out.column("mer_negative").to_pylist(), out.column("mer_positive").to_pylist()
    ([0.20000000298023224], [None])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.schema import CANONICAL_SCHEMA, VIEW_COLUMNS
from cseaug.metrics.mer import mer_pairs
from cseaug.step import Step, StepResult


def mer_column(sentences: pa.ChunkedArray, views: pa.ChunkedArray) -> pa.Array:
    """MER of each (anchor, view) pair as float32; null where the view is null.

    Args:
        sentences: the anchors.
        views: one view column of the same rows.
    """
    out = np.full(len(views), np.nan, dtype=np.float32)
    present = np.flatnonzero(pc.is_valid(views).to_numpy(zero_copy_only=False))
    if present.size:
        index = pa.array(present)
        out[present] = mer_pairs(
            sentences.take(index).to_pylist(), views.take(index).to_pylist()
        ).astype(np.float32)
    return pa.array(out, type=pa.float32(), from_pandas=True)


class MERStep(Step):
    """Fills every ``mer_<view>`` column of canonical rows (see the module docstring)."""

    name = "mer"

    def __call__(self, rows: pa.Table) -> StepResult:
        pairs = 0
        for view in VIEW_COLUMNS:
            name = f"mer_{view}"
            column = mer_column(rows.column("sentence"), rows.column(view))
            pairs += len(column) - column.null_count
            rows = rows.set_column(
                rows.schema.get_field_index(name), CANONICAL_SCHEMA.field(name), column
            )
        return StepResult(rows=rows, stats={"pairs": pairs})
