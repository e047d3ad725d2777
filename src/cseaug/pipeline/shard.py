"""Generate one shard: the sample's anchors through ``[stage, quality, judge, *filters, mer]``.

A shard an earlier attempt finished is reused unless its rejects hold LLM failures a rerun
retries (docs/llm-backends.md, "When the endpoint fails"). A shard whose LLM answered nothing
but such failures probes the endpoints again, so that a worker cut off from them fails with
the probe's one-line error. Anchors whose views the stage or the per-row checks failed are
rejects and, under ``sample.include_other``, ``other`` rows through the other rows' steps;
rows the judge or the filters drop are not kept at all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.augment.llm_views import REJECT_STAGE
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.dataset.shards import RunStore, ShardKind
from cseaug.llm.base import CIRCUIT_OPEN, MALFORMED
from cseaug.llm.clean import LLM_ERROR
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.stages import probe_llms
from cseaug.step import merged_results, run_steps

VIEWS = "views"
"""Run-store stage folder of the generated rows (and of every reject of the shard)."""
DEMOTED = "demoted"
"""Run-store stage folder of sample anchors whose views failed, kept as ``other`` rows."""


@dataclass
class ShardOutcome:
    """Counts of one finished shard (what a task returns instead of tables): ``stats`` by
    step name, generation's and the judge's token ``usage``, and :func:`llm_outcome`."""

    index: int
    rows: int
    rejects: int
    demoted: int
    usage: dict[str, int] = field(default_factory=dict)
    judge_usage: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reused: bool = False
    llm: dict[str, int] = field(default_factory=dict)


def llm_outcome(generated: int, rejects: pa.Table) -> dict[str, int]:
    """``{"generated", "failed", "circuit_open", "retryable"}`` of a shard from its rejects.

    Example:
        >>> from cseaug.dataset.schema import rejects_table
        >>> llm_outcome(3, rejects_table([{"id": "a", "sentence": "s", "stage": "llm", "view": "positive",
        ...     "reason": "circuit_open", "raw": None, "detail": '{"retryable": true}'}]))
        {'generated': 3, 'failed': 0, 'circuit_open': 1, 'retryable': 1}
    """
    llm = rejects.filter(pc.equal(rejects.column("stage"), REJECT_STAGE))
    reasons = llm.column("reason")
    details = pc.fill_null(llm.column("detail"), "")
    retryable = pc.or_(
        pc.equal(reasons, CIRCUIT_OPEN), pc.match_substring(details, '"retryable": true')
    )
    return {
        "generated": generated,
        "failed": pc.sum(pc.is_in(reasons, pa.array([LLM_ERROR, MALFORMED]))).as_py() or 0,
        "circuit_open": pc.sum(pc.equal(reasons, CIRCUIT_OPEN)).as_py() or 0,
        "retryable": pc.sum(retryable).as_py() or 0,
    }


def demoted_rows(inputs: pa.Table, produced: pa.Table) -> pa.Table:
    """Anchors of ``inputs`` that the stage did not return, as ``other`` rows (in input order)."""
    missing = inputs.filter(
        pc.invert(pc.is_in(inputs.column("id"), value_set=produced.column("id")))
    )
    split = pa.repeat(pa.scalar(SPLIT_OTHER), missing.num_rows)
    method = pa.nulls(missing.num_rows, pa.string())
    missing = missing.set_column(missing.schema.get_field_index("split"), "split", split)
    return missing.set_column(missing.schema.get_field_index("method"), "method", method)


def generate_shard(run: BuildRun, index: int) -> ShardOutcome:
    """Run shard ``index`` of the run's plan through the run's steps; store rows and rejects."""
    store = run.store
    if store.exists("rows", index, VIEWS) and store.exists("rejects", index, VIEWS):
        rows = rows_in(store, "rows", index, VIEWS)
        llm = llm_outcome(rows, store.read("rejects", index, VIEWS))
        if not llm["retryable"]:
            return ShardOutcome(
                index=index,
                rows=rows,
                rejects=rows_in(store, "rejects", index, VIEWS),
                demoted=rows_in(store, "rows", index, DEMOTED),  # written before the views
                reused=True,
                llm=llm,
            )
    started = time.perf_counter()
    before, judge_before = run.usage(), run.judge_usage()
    inputs = store.read("input", index)
    steps = run.view_steps()
    run.prefetch_anchors(inputs.column("sentence").to_pylist())
    results = run_steps(steps, inputs)
    views = merged_results(steps, results, inputs)
    answered = llm_outcome(views.rows.num_rows, views.rejects)
    if answered["generated"] == 0 and answered["retryable"] > 0:
        probe_llms(run.cfg)  # the probe's one-line error where this process cannot reach one
    other_steps = run.other_steps()
    failed = (
        demoted_rows(inputs, run.checked_rows(results))
        if run.cfg.sample.include_other
        else inputs.slice(0, 0)
    )
    demoted = merged_results(other_steps, run_steps(other_steps, failed), failed)
    # Demoted rows first, the views last: a shard counts as done once its views exist.
    store.write("rows", index, demoted.rows, stage=DEMOTED)
    store.write("rejects", index, [views.rejects, demoted.rejects], stage=VIEWS)
    store.write("rows", index, views.rows, stage=VIEWS)
    after, judge_after = run.usage(), run.judge_usage()
    return ShardOutcome(
        index=index,
        rows=views.rows.num_rows,
        rejects=views.rejects.num_rows + demoted.rejects.num_rows,
        demoted=demoted.rows.num_rows,
        usage={key: after[key] - before.get(key, 0) for key in after},
        judge_usage={key: judge_after[key] - judge_before.get(key, 0) for key in judge_after},
        stats=views.stats,
        seconds=round(time.perf_counter() - started, 3),
        llm=answered,  # the demoted rows' steps write no LLM rejects
    )


def rows_in(store: RunStore, kind: ShardKind, index: int, stage: str | None = None) -> int:
    """Rows of one finished shard, from its Parquet footer."""
    return pq.ParquetFile(store.shard_path(kind, index, stage)).metadata.num_rows
