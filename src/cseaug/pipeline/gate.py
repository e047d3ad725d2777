"""The publish gate: a build whose stage filled too few of its sampled anchors publishes nothing.

A build against an endpoint that failed every request would otherwise publish the corpus
as ``other`` rows with no generated views, exit 0 and move ``latest`` (issue 8, item 1).
Before publishing, :func:`check_publish_gate` counts the anchors the stage was asked to
fill (the plan's input shards) and those it could not fill: anchors with a reject of the
stage itself (``llm_error``, ``circuit_open``, ``refusal``, ``no_verbal_root``, ...) that
are not among the generated rows. Rows the filters dropped afterwards
(``diagnostics``: contamination, pattern order) were generated: they count as filled.

For the LLM methods (NGCSE, SKICSE) the gate fails when the filled share is below
``publish.min_generated_share`` (default 0.5) or none was filled; for OssCSE and
Generate-CSE, whose own filters may legitimately drop many anchors (OssCSE's MER range),
only when none was filled. ``0`` switches the gate off.

The quality gate, which judges what was generated rather than how much, is
:mod:`cseaug.pipeline.quality_gate`; both forget the finished shards when they stop a build
(:func:`forget_finished_shards`).

Example:
    >>> GateCount(attempted=40, failed=40, reasons={"llm_error": 40}).share
    0.0
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow.parquet as pq

from cseaug.config import LLM_METHODS
from cseaug.errors import PublishGateError
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import VIEWS

FILTER_STAGE = "diagnostics"
"""Stage name of the rejects the row filters write: rows that were generated, then dropped."""


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
    attempted = sum(
        pq.ParquetFile(store.shard_path("input", i)).metadata.num_rows for i in range(shards)
    )
    generated_ids: set[str] = set()
    for path in store.paths("rows", VIEWS):
        generated_ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    failed_ids: set[str] = set()
    reasons: Counter[str] = Counter()
    for path in store.paths("rejects", VIEWS):
        rejects = pq.read_table(path, columns=["id", "stage", "reason"]).to_pylist()
        for reject in rejects:
            if reject["stage"] == FILTER_STAGE or reject["id"] in generated_ids:
                continue
            failed_ids.add(reject["id"])
            reasons[reject["reason"]] += 1
    return GateCount(attempted=attempted, failed=len(failed_ids), reasons=dict(reasons))


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


def forget_finished_shards(run: BuildRun) -> None:
    """Delete the views shards (a shard counts as finished by them); inputs and caches stay."""
    for path in run.store.paths("rows", VIEWS):
        path.unlink(missing_ok=True)


def check_publish_gate(run: BuildRun, shards: int) -> GateCount:
    """Raise :class:`PublishGateError` when the build generated too little (see the module docstring).

    On failure the finished shards are forgotten (their inputs and the LLM response cache are
    kept), so that running the same command again generates them anew: every answer already
    received comes from the cache, and only what failed is sent again.
    """
    count = count_generated(run, shards)
    problem = gate_problem(
        count, run.cfg.publish.min_generated_share, run.cfg.method in LLM_METHODS
    )
    if problem is None:
        return count
    forget_finished_shards(run)
    raise PublishGateError(
        f"{run.cfg.dataset_name}: nothing published: {problem}. Fix the cause (see the rejects' "
        "reasons: an unreachable endpoint, a wrong model) and run the same command again: "
        "answers already received are reused and only the failed requests are sent; "
        "`--set publish.min_generated_share=0` publishes anyway"
    )
