"""Does a row's similarity pattern hold? positive > intermediate > negative (NGCSE, pattern simulation).

A row keeps the pattern when its views fall in that order of similarity to the anchor (CS
falling, MER rising), over the views it has, with strict comparisons; a row with fewer than
two of the three is not eligible. :class:`OrderCounts` counts it batch by batch;
:func:`pattern_order_filter` drops the rows that break it (docs/diagnostics.md, "Pattern order").

Example:
    >>> import numpy as np
    >>> eligible, ordered = order_holds(np.array([[0.9, 0.5, 0.1], [0.9, np.nan, 0.95]]), "cs")
    >>> eligible.tolist(), ordered.tolist()
    ([True, True], [True, False])
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from cseaug.dataset.schema import rejects_table
from cseaug.diagnostics.views import ORDER_VIEWS, AnchorWords, cs_matrix, view_mer
from cseaug.step import StepResult

OrderMetric = Literal["mer", "cs"]

PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (1, 2), (0, 2))
"""Index pairs of (positive, intermediate, negative) whose order is checked."""

REJECT_STAGE = "diagnostics"
REJECT_REASON = "pattern_order"


def order_holds(values: np.ndarray, metric: OrderMetric) -> tuple[np.ndarray, np.ndarray]:
    """Which rows are eligible and which keep the order.

    Args:
        values: (n, 3) array of the metric for (positive, intermediate, negative); NaN where
            the row lacks the view.
        metric: ``cs`` (similarity: must fall) or ``mer`` (error rate: must rise).

    Returns:
        (eligible, ordered) boolean arrays: eligible rows have at least two of the views;
        ordered rows are eligible and every pair of present views is strictly in order.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != 3:
        raise ValueError(f"values must have shape (n, 3), got {values.shape}")
    eligible = np.isfinite(values).sum(axis=1) >= 2
    ordered = eligible.copy()
    for _, _, both, right in _pair_orders(values, metric):
        ordered &= ~both | right
    return eligible, ordered


def _pair_orders(
    values: np.ndarray, metric: OrderMetric
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """For each pair of :data:`PAIRS`: its indices, the rows that have both views, and the
    rows where the pair is in order."""
    present = np.isfinite(values)
    for first, second in PAIRS:
        a, b = values[:, first], values[:, second]
        in_order = a > b if metric == "cs" else a < b
        yield first, second, present[:, first] & present[:, second], in_order


@dataclass
class OrderCounts:
    """Counts of the order check for one metric, accumulated over batches."""

    metric: OrderMetric
    eligible: int = 0
    ordered: int = 0
    all_three: int = 0
    all_three_ordered: int = 0
    pairs: dict[str, list[int]] = field(default_factory=dict)

    def add(self, values: np.ndarray) -> None:
        eligible, ordered = order_holds(values, self.metric)
        full = np.isfinite(values).all(axis=1)
        self.eligible += int(eligible.sum())
        self.ordered += int(ordered.sum())
        self.all_three += int(full.sum())
        self.all_three_ordered += int((ordered & full).sum())
        relation = ">" if self.metric == "cs" else "<"
        for first, second, both, right in _pair_orders(values, self.metric):
            key = f"{ORDER_VIEWS[first]} {relation} {ORDER_VIEWS[second]}"
            held, seen = self.pairs.get(key, [0, 0])
            self.pairs[key] = [held + int((both & right).sum()), seen + int(both.sum())]

    def to_dict(self) -> dict[str, Any]:
        def share(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        return {
            "metric": self.metric,
            "eligible_rows": self.eligible,
            "ordered_rows": self.ordered,
            "share": share(self.ordered, self.eligible),
            "rows_with_all_three": self.all_three,
            "all_three_ordered": self.all_three_ordered,
            "all_three_share": share(self.all_three_ordered, self.all_three),
            "pairs": {
                key: {"held": held, "pairs": seen, "share": share(held, seen)}
                for key, (held, seen) in self.pairs.items()
                if seen
            },
        }


def order_matrix(table: pa.Table, metric: OrderMetric) -> np.ndarray:
    """(n, 3) metric values of (positive, intermediate, negative) for canonical rows; NaN where
    absent. CS is read from the ``cs_<view>`` columns (the build's CS step); MER from the
    ``mer_<view>`` columns where present, else computed."""
    if metric == "cs":
        return cs_matrix(table)
    out = np.full((table.num_rows, 3), np.nan, dtype=np.float64)
    anchors = AnchorWords(table)
    for column, view in enumerate(ORDER_VIEWS):
        if view in table.column_names:
            out[:, column] = view_mer(table, view, anchors)
    return out


def pattern_order_filter(rows: pa.Table, metric: Literal["mer", "cs", "both"]) -> StepResult:
    """Keep the rows whose views keep the order; the others become rejects (reason ``pattern_order``).

    Rows that are not eligible (fewer than two of positive / intermediate / negative, e.g.
    ``other`` rows or SKICSE rows) are kept. With ``both`` a row must keep both orders; ``cs``
    and ``both`` read the ``cs_<view>`` columns, which the build's CS step fills on every row
    when the filter needs them. ``stats`` has the eligible and rejected counts and the
    :class:`OrderCounts` of each metric.
    """
    metrics: list[OrderMetric] = ["mer", "cs"] if metric == "both" else [metric]
    keep = np.ones(rows.num_rows, dtype=bool)
    eligible_any = np.zeros(rows.num_rows, dtype=bool)
    matrices: dict[str, np.ndarray] = {}
    stats: dict[str, Any] = {}
    for m in metrics:
        matrix = order_matrix(rows, m)
        eligible, ordered = order_holds(matrix, m)
        if m == "cs" and (eligible != order_holds(order_matrix(rows, "mer"), "mer")[0]).any():
            raise ValueError(
                "the cosine-similarity order check needs the cs_<view> columns of every row "
                "(the CS step, cseaug.pipeline.cs, without a sample)"
            )
        keep &= ~eligible | ordered
        eligible_any |= eligible
        matrices[m] = matrix
        counts = OrderCounts(m)
        counts.add(matrix)
        stats[m] = counts.to_dict()
    dropped = np.flatnonzero(~keep)
    anchors = rows.select(["id", "sentence"]).take(dropped).to_pylist()
    rejects = rejects_table(
        {
            **anchor,
            "stage": REJECT_STAGE,
            "reason": REJECT_REASON,
            "detail": json.dumps(
                {
                    m: {
                        view: (None if np.isnan(v) else round(float(v), 4))
                        for view, v in zip(ORDER_VIEWS, matrices[m][i], strict=True)
                    }
                    for m in metrics
                }
            ),
        }
        for i, anchor in zip(dropped, anchors, strict=True)
    )
    stats.update(eligible=int(eligible_any.sum()), rejected=int(dropped.size))
    return StepResult(rows=rows.filter(pa.array(keep)), rejects=rejects, stats=stats)


@dataclass(frozen=True)
class OrderSample:
    """The order check of a table on the CS sample of its eligible rows (the quality gate's).

    Attributes:
        rows: the sampled eligible rows (canonical columns).
        cs: (n, 3) cosine similarities of the sample (:func:`order_matrix`).
        mer: (n, 3) MER of the sample.
        eligible: eligible rows of the whole table (the sample's population).
    """

    rows: pa.Table
    cs: np.ndarray
    mer: np.ndarray
    eligible: int

    @property
    def cs_ordered(self) -> np.ndarray:
        """Which sampled rows keep the cosine-similarity order."""
        return order_holds(self.cs, "cs")[1]

    def counts(self, metric: OrderMetric) -> OrderCounts:
        """The :class:`OrderCounts` of the sample for ``metric``."""
        counts = OrderCounts(metric)
        counts.add(self.cs if metric == "cs" else self.mer)
        return counts


def measured_order(table: pa.Table) -> OrderSample:
    """The order of the rows of ``table`` whose ``cs_<view>`` columns were measured (the CS
    sample, :mod:`cseaug.pipeline.cs`), among its eligible rows."""
    mer = order_matrix(table, "mer")
    eligible = order_holds(mer, "mer")[0]
    cs = order_matrix(table, "cs")
    measured = np.flatnonzero(eligible & order_holds(cs, "cs")[0])
    return OrderSample(
        rows=table.take(pa.array(measured, type=pa.int64())),
        cs=cs[measured],
        mer=mer[measured],
        eligible=int(eligible.sum()),
    )
