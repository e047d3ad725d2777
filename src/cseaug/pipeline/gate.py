"""The publish gates (docs/prefect.md, "After the shards: the publish gate"; docs/quality.md,
"The quality gate"): a build whose stage filled too few of the anchors it was asked to fill
(:func:`check_publish_gate`: ``publish.min_generated_share`` for the LLM methods, one anchor
for OssCSE and Generate-CSE, whose own filters may drop many), or whose views keep NGCSE's
graded order (NGCSE, section "Pattern Simulation") in cosine similarity to the anchor too
rarely (:func:`check_quality_gate`, over the build's ``cs_<view>`` columns, against
``publish.min_pattern_share``), publishes nothing; its finished shards are forgotten
(:func:`stop_publishing`) so that the same command generates them anew, every answer already
received from the response cache. SKICSE's and Generate-CSE's views have no graded order and
OssCSE's negation is closer to its anchor in words than its back-translation by construction
(OssCSE, section 3, Example 1): for them the gate records why it did not apply.

Example:
    >>> GateCount(attempted=40, failed=40, reasons={"llm_error": 40}).share
    0.0
    >>> NOT_ORDERED["ski"]
    "SKICSE's knowledge view has no graded order"
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.config import LLM_METHODS
from cseaug.config.fingerprint import measures_cs
from cseaug.dataset.counts import RowCounts
from cseaug.dataset.manifest import measured_share
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.diagnostics.patterns import (
    REJECT_REASON,
    REJECT_STAGE,
    OrderSample,
    measured_order,
)
from cseaug.diagnostics.views import ORDER_VIEWS
from cseaug.errors import PublishGateError
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import DEMOTED, VIEWS, rows_in
from cseaug.progress import progress_bar

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateCount:
    """Anchors the stage was asked to fill, those it could not, and why (reason: rejects)."""

    attempted: int
    failed: int
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def generated(self) -> int:
        return self.attempted - self.failed

    @property
    def share(self) -> float:
        return self.generated / self.attempted if self.attempted else 1.0


def count_generated(run: BuildRun, shards: int) -> GateCount:
    """Count attempted and unfilled anchors from the run store's finished shards."""
    store = run.store
    generated = set(pq.read_table(store.paths("rows", VIEWS), columns=["id"])["id"].to_pylist())
    # the filters' rejects (contamination, pattern order) were generated, then dropped
    stage_rejects = pq.read_table(
        store.paths("rejects", VIEWS),
        columns=["id", "reason"],
        filters=[("stage", "!=", REJECT_STAGE)],
    )
    unfilled = [reject for reject in stage_rejects.to_pylist() if reject["id"] not in generated]
    return GateCount(
        attempted=sum(rows_in(store, "input", index) for index in range(shards)),
        failed=len({reject["id"] for reject in unfilled}),
        reasons=dict(Counter(reject["reason"] for reject in unfilled)),
    )


def gate_problem(count: GateCount, minimum: float, llm_method: bool) -> str | None:
    """Why the build must not publish, or None when it may.

    Example:
        >>> gate_problem(GateCount(10, 2), 0.5, llm_method=True) is None
        True
        >>> gate_problem(GateCount(10, 8), 0.5, llm_method=False) is None  # OssCSE's filters
        True
        >>> gate_problem(GateCount(10, 6, {"llm_error": 6}), 0.5, llm_method=True)
        'generated views for 4 of 10 sampled anchors (40%), below publish.min_generated_share 50%; their rejects: llm_error 6'
    """
    if minimum == 0 or count.attempted == 0:
        return None
    if count.generated > 0 and (not llm_method or count.share >= minimum):
        return None
    reasons = ", ".join(f"{reason} {n:,}" for reason, n in sorted(count.reasons.items()))
    return (
        f"generated views for {count.generated:,} of {count.attempted:,} sampled anchors "
        f"({count.share:.0%}), below publish.min_generated_share {minimum:.0%}"
        + (f"; their rejects: {reasons}" if reasons else "")
    )


def stop_publishing(run: BuildRun, problem: str) -> NoReturn:
    """Forget the finished shards (their views; inputs and caches stay) and raise
    :class:`PublishGateError`: ``<dataset>: nothing published: <problem>``, whose ``summary``
    holds what the run store held (:func:`stored_counts`)."""
    refused = PublishGateError(f"{run.cfg.dataset_name}: nothing published: {problem}")
    refused.summary = stored_counts(run)  # before the views are forgotten
    for path in run.store.paths("rows", VIEWS):
        path.unlink(missing_ok=True)
    raise refused


def stored_counts(run: BuildRun) -> dict[str, Any]:
    """The rows and rejects of the run store's finished shards, counted as the summary of a
    published build counts them (what a build the gate refused prints instead)."""
    aigen, other = (
        sum(pq.ParquetFile(p).metadata.num_rows for s in stages for p in run.store.paths("rows", s))
        for stages in ((VIEWS,), (DEMOTED, SPLIT_OTHER))
    )
    counts = RowCounts()
    counts.add_rejects(pq.read_table(run.store.paths("rejects"), columns=["stage", "reason"]))
    return {"rows": aigen + other, "aigen": aigen, "other": other, "rejects": counts.rejects,
            "rejects_by_stage": counts.as_dict()["rejects_by_stage"]}  # fmt: skip


def check_publish_gate(run: BuildRun, shards: int) -> GateCount:
    """Raise :class:`PublishGateError` when the build generated too little (see the module
    docstring)."""
    count = count_generated(run, shards)
    problem = gate_problem(
        count, run.cfg.publish.min_generated_share, run.cfg.method in LLM_METHODS
    )
    if problem is None:
        return count
    stop_publishing(
        run,
        f"{problem}. Fix the cause (see the rejects' "
        "reasons: an unreachable endpoint, a wrong model) and run the same command again: "
        "answers already received are reused and only the failed requests are sent; "
        "`--set publish.min_generated_share=0` publishes anyway",
    )


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


def filtered_out_of_order(run: BuildRun) -> list[dict[str, Any]]:
    """The rows the opt-in pattern filter dropped (rejects ``diagnostics`` / ``pattern_order``)
    as the failures file records them: ``id``, ``sentence`` and ``pattern_filter``, what the
    filter measured (metric -> view -> value, the reject's ``detail``)."""
    rejects = pq.read_table(
        run.store.paths("rejects", VIEWS),
        columns=["id", "sentence", "detail"],
        filters=[("stage", "==", REJECT_STAGE), ("reason", "==", REJECT_REASON)],
    )
    return [
        {"id": row["id"], "sentence": row["sentence"], "pattern_filter": json.loads(row["detail"])}
        for row in rejects.to_pylist()
    ]


@dataclass(frozen=True)
class QualityGate:
    """The quality gate's record, the manifest's ``quality_gate`` (docs/quality.md, "What a
    version records"): why the order was not checked (``reason``), or what was measured.

    The share is that of every generated row with two ordered views: the rows the pattern
    filter dropped (``filtered_rows``) count as out of order, so a filter cannot hide a model
    that answers out of order. With a sample, the share of the sample is scaled by the share
    of rows the filter kept, and so is its standard error.
    """

    checked: bool
    reason: str | None = None
    order: str | None = None
    encoder: str | None = None
    eligible_rows: int = 0
    rows: int = 0
    sampled: bool = False
    ordered_rows: int = 0
    filtered_rows: int = 0
    share: float | None = None
    standard_error: float | None = None
    mer_share: float | None = None
    min_pattern_share: float = 0.0
    passed: bool = True

    @classmethod
    def measured(
        cls, sample: OrderSample, filtered: int, minimum: float, method: str, encoder: str
    ) -> QualityGate:
        """The record of a measured ``sample``.

        Example:
            >>> import numpy as np, pyarrow as pa
            >>> sample = OrderSample(pa.table({"id": ["a", "b"]}), np.array([[0.9, np.nan, 0.1],
            ...     [0.2, np.nan, 0.8]]), np.full((2, 3), np.nan), eligible=2)
            >>> gate = QualityGate.measured(sample, 2, 0.7, "nli", "m")
            >>> gate.ordered_rows, gate.rows, gate.filtered_rows, gate.share
            (1, 2, 2, 0.25)
        """
        cs, mer = sample.counts("cs"), sample.counts("mer")
        population = sample.eligible + filtered
        kept = sample.eligible / population if population else 1.0
        measured = cs.ordered / cs.eligible if cs.eligible else 0.0
        share = measured * kept if population else None
        error = math.sqrt(measured * (1 - measured) / cs.eligible) if cs.eligible else 0.0
        return cls(
            checked=True,
            order=ORDERED_METHODS[method],
            encoder=encoder,
            eligible_rows=sample.eligible,
            rows=cs.eligible,
            sampled=cs.eligible < sample.eligible,
            ordered_rows=cs.ordered,
            filtered_rows=filtered,
            share=share,
            standard_error=None if share is None else round(error * kept, 4),
            mer_share=mer.ordered / mer.eligible if mer.eligible else None,
            min_pattern_share=minimum,
            passed=share is None or share >= minimum,
        )

    def as_dict(self) -> dict[str, Any]:
        """The manifest's JSON: ``check``, ``checked`` and ``reason``, or the measured figures."""
        record = {"check": "pattern_order", **asdict(self)}
        if not self.checked:
            return {key: record[key] for key in ("check", "checked", "reason")}
        del record["reason"]
        return record


def _short(text: str | None, limit: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _example_lines(
    sample: OrderSample, wrong: np.ndarray, filtered: list[dict[str, Any]]
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
        measured = "; ".join(
            f"{metric}: "
            + ", ".join(f"{view} {value:.2f}" for view, value in views.items() if value is not None)
            for metric, views in row["pattern_filter"].items()
        )
        lines.append(f'"{_short(row["sentence"])}": dropped by the pattern filter ({measured})')
    return [f"  {number}. {line}" for number, line in enumerate(lines, 1)]


def _write_failures(
    path: Path, sample: OrderSample, wrong: np.ndarray, filtered: list[dict[str, Any]]
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
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def _generated_rows(run: BuildRun) -> pa.Table:
    """The generated rows of the run store: id, anchor, the order views, their MER and CS."""
    columns = ["id", "sentence", *ORDER_VIEWS]
    columns += [f"{metric}_{v}" for metric in ("mer", "cs") for v in ORDER_VIEWS]
    return pq.read_table(run.store.paths("rows", VIEWS), columns=columns)


def check_quality_gate(run: BuildRun) -> QualityGate:
    """Count the pattern order of the generated rows of the CS sample over the ``cs_<view>``
    columns of the CS step (:mod:`cseaug.pipeline.cs`), rows ``diagnostics.pattern_filter``
    dropped as out of order; unmeasured only with ``publish.min_pattern_share: 0`` and
    diagnostics off, and the record says so.

    Raises:
        PublishGateError: the share is below ``publish.min_pattern_share``. The out-of-order
            rows are written to ``<run store>/pattern_order_failures.jsonl`` and the finished
            shards are forgotten: a rerun with a fixed model generates them anew (the same
            model's answers come from the response cache, nothing is sent twice).
    """
    cfg = run.cfg
    minimum = cfg.publish.min_pattern_share
    if cfg.method not in ORDERED_METHODS:
        return QualityGate(checked=False, reason=NOT_ORDERED[cfg.method])
    if not measures_cs(cfg):
        reason = "publish.min_pattern_share is 0 and diagnostics.enabled is false"
        logger.warning("quality gate not run: %s", reason)
        return QualityGate(checked=False, reason=reason)
    with progress_bar("Quality gate: pattern order", total=1, unit="checks") as bar:
        sample = measured_order(_generated_rows(run))
        bar.advance()
    filtered = filtered_out_of_order(run)
    encoder = cfg.diagnostics.encoder
    record = QualityGate.measured(sample, len(filtered), minimum, cfg.method, encoder)
    if record.passed or minimum == 0:
        return record
    wrong = np.flatnonzero(~sample.cs_ordered)
    failures = run.store.path / FAILURES_FILE
    _write_failures(failures, sample, wrong, filtered)
    stop_publishing(
        run,
        f"{measured_share(record.as_dict())} keep the order "
        f"{record.order} in cosine similarity to the anchor ({encoder}), below "
        f"publish.min_pattern_share {minimum:.0%} (human-written data: 88-94%, "
        "docs/quality.md); rows out of order, e.g.:\n"
        + "\n".join(_example_lines(sample, wrong, filtered))
        + f"\nAll {wrong.size + len(filtered):,} rows out of order: {failures}. Fix the model "
        "(another llm.model, or llm.model_revision for new weights under the same name: "
        "answers are cached per model and revision) and run the same command again, or "
        "publish anyway with `--set publish.min_pattern_share=0` (answers already received "
        "are reused).",
    )
