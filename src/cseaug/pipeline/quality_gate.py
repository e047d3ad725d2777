"""The quality gate: an NGCSE build whose views keep the graded order too rarely publishes nothing.

A server that answers every request can still answer badly: one paraphrase for every level,
positive and negative exchanged, the levels rotated (issue 20, item 2). NGCSE asks its LLM
for views in a graded order (NGCSE, section "Pattern Simulation": ``sts`` a positive, an
intermediate and a negative; ``nli`` an entailment and a contradiction). Before publishing,
:func:`check_quality_gate` measures the share of generated rows whose views keep that order
in cosine similarity to the anchor (:mod:`cseaug.diagnostics.patterns`), with the build's
diagnostics encoder on the rows the diagnostics measure; below ``publish.min_pattern_share``
(default 0.7; human-written data keep the order in 88-94% of rows,
``benchmarks/measure_pattern_share.py``, docs/quality.md) nothing is published.

SKICSE's and Generate-CSE's views have no graded order. OssCSE's negation is by construction
closer to its anchor in words than its back-translation (OssCSE, section 3, Example 1), and
unsupervised encoders rank it closer in meaning too: the order is what OssCSE trains for,
not what a fixed encoder checks its views by. For them the gate records why it did not apply.

Example:
    >>> NOT_ORDERED["ski"]
    "SKICSE's knowledge view has no graded order"
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.dataset.manifest import measured_share
from cseaug.diagnostics.patterns import REJECT_REASON, REJECT_STAGE, OrderSample, sample_order
from cseaug.diagnostics.views import ORDER_VIEWS
from cseaug.errors import PublishGateError
from cseaug.pipeline.gate import forget_finished_shards
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import VIEWS

logger = logging.getLogger(__name__)

ORDERED_METHODS: dict[str, str] = {
    "sts": "positive > intermediate > negative",
    "nli": "entailment (positive) > contradiction (negative)",
}
"""The methods the quality gate checks, and the order of cosine similarity to the anchor."""
NOT_ORDERED: dict[str, str] = {
    "ski": "SKICSE's knowledge view has no graded order",
    "generate_cse": "Generate-CSE's views have no graded order",
    "osscse": "OssCSE's negation is closer to its anchor in words than its back-translation "
    "by construction (OssCSE, section 3); its MER range filter checks the back-translation",
}
EXAMPLES = 5
"""Rows out of order the gate's message shows."""
FAILURES_FILE = "pattern_order_failures.jsonl"
"""Every row out of order, written into the run store when the gate stops a build."""


@dataclass(frozen=True)
class FilteredRow:
    """A generated row ``diagnostics.pattern_filter`` dropped: its views broke the order."""

    id: str
    sentence: str
    values: dict[str, dict[str, float | None]]
    """metric -> view -> value, as the filter recorded them (the reject's ``detail``)."""

    def describe(self) -> str:
        """``cs: positive 0.12, negative 0.88`` (each metric the filter measured)."""
        return "; ".join(
            f"{metric}: "
            + ", ".join(f"{view} {value:.2f}" for view, value in views.items() if value is not None)
            for metric, views in self.values.items()
        )


def filtered_out_of_order(run: BuildRun) -> list[FilteredRow]:
    """The rows the opt-in pattern filter dropped (rejects ``diagnostics`` / ``pattern_order``)."""
    rows = []
    for path in run.store.paths("rejects", VIEWS):
        table = pq.read_table(path, columns=["id", "sentence", "stage", "reason", "detail"])
        for reject in table.to_pylist():
            if reject["stage"] == REJECT_STAGE and reject["reason"] == REJECT_REASON:
                values = json.loads(reject["detail"])
                rows.append(FilteredRow(reject["id"], reject["sentence"], values))
    return rows


def _share_error(share: float, n: int) -> float:
    """The standard error sqrt(p(1-p)/n) of a share measured on n sampled rows."""
    return math.sqrt(share * (1 - share) / n) if n else 0.0


def pattern_record(
    sample: OrderSample, filtered: int, minimum: float, method: str, encoder: str
) -> dict[str, Any]:
    """The quality gate's figures as the manifest records them (``quality_gate``).

    The share is that of every generated row with two ordered views: the rows the pattern
    filter dropped (``filtered``) count as out of order, so a filter cannot hide a model that
    answers out of order. With a sample, the share of the sample is scaled by the share of
    rows the filter kept, and so is its standard error.

    Example:
        >>> import numpy as np, pyarrow as pa
        >>> sample = OrderSample(pa.table({"id": ["a", "b"]}), np.array([[0.9, np.nan, 0.1],
        ...     [0.2, np.nan, 0.8]]), np.full((2, 3), np.nan), eligible=2)
        >>> record = pattern_record(sample, 2, 0.7, "nli", "m")
        >>> record["ordered_rows"], record["rows"], record["filtered_rows"], record["share"]
        (1, 2, 2, 0.25)
    """
    cs, mer = sample.counts("cs"), sample.counts("mer")
    population = sample.eligible + filtered
    kept = sample.eligible / population if population else 1.0
    measured = cs.ordered / cs.eligible if cs.eligible else 0.0
    share = measured * kept if population else None
    return {
        "check": "pattern_order",
        "checked": True,
        "order": ORDERED_METHODS[method],
        "encoder": encoder,
        "eligible_rows": sample.eligible,
        "rows": cs.eligible,
        "sampled": cs.eligible < sample.eligible,
        "ordered_rows": cs.ordered,
        "filtered_rows": filtered,
        "share": share,
        "standard_error": None
        if share is None
        else round(_share_error(measured, cs.eligible) * kept, 4),
        "mer_share": mer.ordered / mer.eligible if mer.eligible else None,
        "min_pattern_share": minimum,
        "passed": share is None or share >= minimum,
    }


def _short(text: str | None, limit: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _example_lines(
    sample: OrderSample, wrong: np.ndarray, filtered: list[FilteredRow]
) -> list[str]:
    """Up to :data:`EXAMPLES` rows out of order: measured ones first, then filtered ones."""
    shown = wrong[:EXAMPLES]
    rows = sample.rows.take(pa.array(shown, type=pa.int64())).to_pylist()
    lines = []
    for row, values in zip(rows, sample.cs[shown], strict=True):
        views = [
            f'{view} "{_short(row[view])}" (cs {value:.2f})'
            for view, value in zip(ORDER_VIEWS, values, strict=True)
            if row.get(view) is not None
        ]
        lines.append(f'"{_short(row["sentence"])}": ' + "; ".join(views))
    for row in filtered[: EXAMPLES - len(lines)]:
        lines.append(f'"{_short(row.sentence)}": dropped by the pattern filter ({row.describe()})')
    return [f"  {number}. {line}" for number, line in enumerate(lines, 1)]


def _write_failures(
    path: Path, sample: OrderSample, wrong: np.ndarray, filtered: list[FilteredRow]
) -> None:
    """Every row out of order as JSON lines: measured rows with their views, cosine
    similarities and MER; filtered rows with what the filter measured."""
    rows = sample.rows.take(pa.array(wrong, type=pa.int64())).to_pylist()
    with path.open("w", encoding="utf-8") as out:
        for row, cs, mer in zip(rows, sample.cs[wrong], sample.mer[wrong], strict=True):
            record = {key: row.get(key) for key in ("id", "sentence", *ORDER_VIEWS)}
            for name, values in (("cs", cs), ("mer", mer)):
                record[name] = {
                    v: round(float(x), 4)
                    for v, x in zip(ORDER_VIEWS, values, strict=True)
                    if np.isfinite(x)
                }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        for row in filtered:
            record = {"id": row.id, "sentence": row.sentence, "pattern_filter": row.values}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _generated_rows(run: BuildRun) -> pa.Table:
    """The generated rows of the run store: id, anchor, the order views and their MER."""
    tables = []
    for path in run.store.paths("rows", VIEWS):
        names = pq.read_schema(path).names
        wanted = ["id", "sentence", *ORDER_VIEWS, *(f"mer_{v}" for v in ORDER_VIEWS)]
        tables.append(pq.read_table(path, columns=[c for c in wanted if c in names]))
    if not tables:
        return pa.table({"id": pa.array([], pa.string()), "sentence": pa.array([], pa.string())})
    return pa.concat_tables(tables, promote_options="default")


def check_quality_gate(run: BuildRun) -> dict[str, Any]:
    """Measure the generated rows' pattern order; raise :class:`PublishGateError` below the
    threshold (see the module docstring).

    The order is measured with the build's diagnostics encoder (its worker and embedding
    cache) on the rows the diagnostics measure: every generated row, or a seeded sample of
    ``diagnostics.cs_sample`` of them; rows ``diagnostics.pattern_filter`` dropped count as
    out of order. ``diagnostics.enabled: false`` does not turn the gate off: the encoder is
    loaded for it all the same; only ``publish.min_pattern_share: 0`` with diagnostics off
    leaves the order unmeasured, and the record says so.

    Returns:
        The ``quality_gate`` record of the manifest.

    Raises:
        PublishGateError: the share is below ``publish.min_pattern_share``. The out-of-order
            rows are written to ``<run store>/pattern_order_failures.jsonl`` and the finished
            shards are forgotten: a rerun with a fixed model generates them anew (the same
            model's answers come from the response cache, nothing is sent twice).
    """
    cfg = run.cfg
    minimum = cfg.publish.min_pattern_share
    if cfg.method not in ORDERED_METHODS:
        return {"check": "pattern_order", "checked": False, "reason": NOT_ORDERED[cfg.method]}
    encoder = run.diagnostics_encoder()
    if encoder is None:
        reason = "publish.min_pattern_share is 0 and diagnostics.enabled is false"
        logger.warning("quality gate not run: %s", reason)
        return {"check": "pattern_order", "checked": False, "reason": reason}
    sample = sample_order(
        _generated_rows(run), encoder, cfg.diagnostics.cs_sample, cfg.diagnostics.seed
    )
    filtered = filtered_out_of_order(run)
    record = pattern_record(sample, len(filtered), minimum, cfg.method, encoder.name)
    if record["passed"] or minimum == 0:
        return record
    wrong = np.flatnonzero(~sample.cs_ordered)
    failures = run.store.path / FAILURES_FILE
    _write_failures(failures, sample, wrong, filtered)
    forget_finished_shards(run)
    raise PublishGateError(
        f"{cfg.dataset_name}: nothing published: {measured_share(record)} keep the order "
        f"{record['order']} in cosine similarity to the anchor ({encoder.name}), below "
        f"publish.min_pattern_share {minimum:.0%} (human-written data: 88-94%, "
        "docs/quality.md); rows out of order, e.g.:\n"
        + "\n".join(_example_lines(sample, wrong, filtered))
        + f"\nAll {wrong.size + len(filtered):,} rows out of order: {failures}. Fix the model "
        "(another llm.model, or llm.model_revision for new weights under the same name: "
        "answers are cached per model and revision) and run the same command again, or "
        "publish anyway with `--set publish.min_pattern_share=0` (answers already received "
        "are reused)."
    )
