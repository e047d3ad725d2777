"""Generate one shard: the sample's anchors through ``[stage, *filters, mer]``.

A shard already finished by an earlier attempt of the same build is not run again, and
the LLM response cache means a crashed shard re-sends only what was never answered.
Anchors whose views failed are in the stage's rejects and, when ``sample.include_other``,
are kept as ``other`` rows (they are still corpus sentences of the hybrid dataset), through
the ``other`` rows' steps. Rows the filters drop are not kept at all.

Example:
    >>> from cseaug.build.run import BuildRun
    >>> with BuildRun.from_plan(plan.path) as run:  # doctest: +SKIP
    ...     generate_shard(run, 0).rows
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.build.run import BuildRun
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.dataset.shards import RunStore, ShardKind
from cseaug.step import merged_results, run_steps

VIEWS = "views"
"""Run-store stage folder of the generated rows (and of every reject of the shard)."""
DEMOTED = "demoted"
"""Run-store stage folder of sample anchors whose views failed, kept as ``other`` rows."""


@dataclass
class ShardOutcome:
    """Paths and counts of one finished shard (what a task returns instead of tables).

    ``stats`` has each step's statistics by step name.
    """

    index: int
    rows: int
    rejects: int
    demoted: int
    usage: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reused: bool = False


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
    """Run shard ``index`` of the run's plan through its steps and store rows and rejects.

    Args:
        run: the build run (its steps are made here if they were not yet).
        index: the shard number (0 to ``plan.shards - 1``).
    """
    store = run.store
    if store.exists("rows", index, VIEWS) and store.exists("rejects", index, VIEWS):
        return ShardOutcome(
            index=index,
            rows=_rows_in(store, "rows", index, VIEWS),
            rejects=_rows_in(store, "rejects", index, VIEWS),
            demoted=_rows_in(store, "rows", index, DEMOTED),  # written before the views
            reused=True,
        )
    started = time.perf_counter()
    before = run.usage()
    inputs = store.read("input", index)
    steps = run.view_steps()
    results = run_steps(steps, inputs)
    views = merged_results(steps, results, inputs)
    other_steps = run.other_steps()
    failed = (
        demoted_rows(inputs, results[0].rows)
        if run.cfg.sample.include_other
        else inputs.slice(0, 0)
    )
    demoted = merged_results(other_steps, run_steps(other_steps, failed), failed)
    # Demoted rows first, the views last: a shard counts as done once its views exist.
    store.write("rows", index, demoted.rows, stage=DEMOTED)
    store.write("rejects", index, [views.rejects, demoted.rejects], stage=VIEWS)
    store.write("rows", index, views.rows, stage=VIEWS)
    after = run.usage()
    return ShardOutcome(
        index=index,
        rows=views.rows.num_rows,
        rejects=views.rejects.num_rows + demoted.rejects.num_rows,
        demoted=demoted.rows.num_rows,
        usage={key: after[key] - before.get(key, 0) for key in after},
        stats=views.stats,
        seconds=round(time.perf_counter() - started, 3),
    )


def _rows_in(store: RunStore, kind: ShardKind, index: int, stage: str) -> int:
    """Rows of one finished shard, from its Parquet footer."""
    return pq.ParquetFile(store.shard_path(kind, index, stage)).metadata.num_rows
