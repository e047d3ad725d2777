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

from cseaug.dataset.schema import CANONICAL_SCHEMA, VIEW_COLUMNS
from cseaug.metrics.mer import mer_pairs
from cseaug.step import Step, StepResult


class MERStep(Step):
    """Fills every ``mer_<view>`` column of canonical rows (see the module docstring)."""

    name = "mer"

    def __call__(self, rows: pa.Table) -> StepResult:
        sentences = rows.column("sentence").to_pylist()
        values = {v: mer_pairs(sentences, rows.column(v).to_pylist()) for v in VIEW_COLUMNS}
        return with_metric(rows, "mer", values)


def with_metric(rows: pa.Table, metric: str, values: dict[str, np.ndarray]) -> StepResult:
    """``rows`` with the ``<metric>_<view>`` column of each view of ``values`` set, as float32
    (NaN: null), and the pairs measured: the MER step's result and the CS step's."""
    pairs = 0
    for view, by_row in values.items():
        name = f"{metric}_{view}"
        column = pa.array(by_row.astype(np.float32), type=pa.float32(), from_pandas=True)
        pairs += len(column) - column.null_count
        rows = rows.set_column(
            rows.schema.get_field_index(name), CANONICAL_SCHEMA.field(name), column
        )
    return StepResult(rows=rows, stats={"pairs": pairs})
