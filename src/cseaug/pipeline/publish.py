"""Publish a build: the finished shards of a plan as a new immutable version, then its exports.

The generated rows, the demoted and ``other`` rows and every reject stream from the run
store into :func:`cseaug.dataset.staging.publish_version` (diagnostics are written into the
staging directory before the atomic rename); the configured exports are written from
the published version. The steps are not needed here, so publishing loads no model.
On an object store (``output.root`` a URI) the exports are written beside the version's
local copy in the work directory and uploaded to ``<root>/exports/<name>/<version>/``.

Example:
    from cseaug.pipeline.run import BuildRun
    with BuildRun.from_plan(plan) as run:
        publish_build(run, outcomes).version_dir  # PosixPath('storage/datasets/demo/v0001')
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from cseaug import wallclock
from cseaug.dataset.commit_remote import upload_exports
from cseaug.dataset.manifest import build_manifest
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.dataset.staging import publish_version
from cseaug.errors import CseaugError, InputError, PublishGateError, os_error_message
from cseaug.llm.base import ANSWERED_BY
from cseaug.llm.cache import build_spending
from cseaug.pipeline.gate import check_publish_gate, check_quality_gate
from cseaug.pipeline.plan import CORPUS
from cseaug.pipeline.run import BuildRun, read_plan
from cseaug.pipeline.shard import DEMOTED, VIEWS, ShardOutcome
from cseaug.quality.judge import judge_spent_by
from cseaug.roots import is_uri
from cseaug.step import summed_usage

DIAGNOSTICS = "diagnostics"


@dataclass(kw_only=True)
class BuildSummary:
    """What a build prints and returns: a published (or reused) version's, or, without a
    version, what a build a gate refused made (:class:`PublishGateError`'s ``summary``)."""

    dataset: str
    rows: int
    aigen: int
    other: int
    rejects: int
    rejects_by_stage: dict[str, dict[str, int]]
    token_usage: dict[str, int]
    judge_usage: dict[str, int] = field(default_factory=dict)
    """The LLM judge's token usage in this run (empty without a judge)."""
    seconds: float
    """Wall time from the command's start (else the flow's first task) to the end of
    publishing; the parts in ``timings`` add up to it."""
    timings: dict[str, float]
    finished_at: float
    """When publishing ended (seconds since the epoch): the command that prints the summary
    adds the time from there (the flow's end) to ``seconds``."""
    version: str | None = None
    version_dir: Path | None = None
    """The version's directory (on an object store: its local copy; see ``location``)."""
    location: str = ""
    """Where the version is published: its directory, or its URI on an object store."""
    reused_version: str | None = None
    """``name/vNNNN`` when the build's data equal the latest version's and nothing new was
    published (``output.force_new_version`` publishes anyway)."""
    exports: list[str] = field(default_factory=list)
    diagnostics_dir: str | None = None

    @property
    def message(self) -> str:
        """One line: what was published, or which version already holds the data."""
        if self.reused_version:
            return (
                f"unchanged: {self.reused_version} already holds this data; nothing new "
                "published (--force-new-version publishes anyway)"
            )
        return f"published {self.location or self.version_dir} ({self.rows} rows, {self.rejects} rejects)"


def publish_build(run: BuildRun, outcomes: list[ShardOutcome]) -> BuildSummary:
    """Publish the finished shards of the run's plan as a new version and write its exports.

    Args:
        run: the build run.
        outcomes: every shard's outcome (token usage and timings for the manifest).

    Raises:
        InputError: a shard of the plan is not finished (nothing is published).
        PublishGateError: the stage filled too few anchors, or its views keep the method's
            order too rarely (:mod:`cseaug.pipeline.gate`); nothing is published and the shards
            are forgotten, so a rerun generates them.
    """
    from cseaug.dataset.export import write_configured_exports
    from cseaug.diagnostics.report import write_report
    from cseaug.diagnostics.version import REPORT_FILE, write_diagnostics

    marks = run.clock.marks  # all made before publishing: command start, hand-over, plan
    started, started_at = time.perf_counter(), time.time()
    plan = read_plan(run.plan_path)
    cfg, store = run.cfg, run.store
    missing = [i for i in range(plan.shards) if not store.exists("rows", i, VIEWS)]
    if missing:
        raise InputError(f"run {plan.run_id}: shards {missing} are not finished; nothing published")
    usage = summed_usage([o.usage for o in outcomes])
    answered_by = {  # the models the answers name: the provenance, apart from the counts
        key.removeprefix(ANSWERED_BY): usage.pop(key)
        for key in sorted(usage)
        if key.startswith(ANSWERED_BY)
    }
    stage_info = plan.stage
    model = stage_info.get("model")
    if model is not None and answered_by:
        model = {**model, "answered_by": answered_by}
    judge_usage = summed_usage([o.judge_usage for o in outcomes])  # empty without a judge
    phases = {
        "plan": plan.seconds["plan"],
        "generate": generation_seconds(marks, plan.seconds["plan"], outcomes, started_at),
    }
    try:
        check_publish_gate(run, plan.shards)
        quality_gate = check_quality_gate(run)
    except PublishGateError as refused:
        phases["publish"] = round(time.perf_counter() - started, 3)
        now = time.time()
        refused.summary = BuildSummary(
            dataset=cfg.dataset_name,
            **refused.summary,  # the run store's counts (gate.stored_counts)
            token_usage=usage,
            judge_usage=judge_usage,
            seconds=wallclock.wall_seconds(marks, phases, now),
            timings=wallclock.build_timings(marks, phases, now),
            finished_at=now,
        )
        raise
    spent = build_spending(cfg.cache_path, store.path.name) if cfg.llm is not None else {}
    # this run's requests; the whole build's, over every attempt, from the cache's records
    token_usage: dict[str, Any] = {"this_run": usage, "build": spent}
    if cfg.judge_llm is not None:  # the judge's apart from generation's
        token_usage["judge"] = {
            "this_run": judge_usage,
            "build": build_spending(cfg.cache_path, judge_spent_by(store.path.name)),
        }
    manifest = build_manifest(
        cfg,
        inputs={"corpus": {"name": plan.corpus["name"], "files": plan.corpus["sha256"]}},
        prompts=stage_info.get("prompts", ()),
        example_set=stage_info.get("example_set"),
        model=model,
        token_usage=token_usage,
        timings={},  # filled in once the data files are sealed (diagnostics are timed too)
        extra={
            "corpus_stats": plan.corpus["stats"],
            "demoted_to_other": sum(o.demoted for o in outcomes),
        },
    )
    manifest["quality_gate"] = quality_gate.as_dict()

    def diagnostics(staging: Path) -> None:
        sealed = time.perf_counter()
        phases["publish"] = round(sealed - started, 3)
        if cfg.diagnostics.enabled:
            encoder = run.encoder()
            if encoder is not None:  # generation is over: it may take publish_threads
                encoder.generation_done()
            write_diagnostics(
                staging,
                staging / DIAGNOSTICS,
                cfg.diagnostics,
                encoder=encoder,
                cache_dir=cfg.work_dir / "cache" / "embeddings",
                title=cfg.dataset_name,
            )
            target = staging / DIAGNOSTICS / REPORT_FILE
            write_report(staging, target, manifest, cfg.diagnostics, encoder=encoder)
            phases["diagnostics"] = round(time.perf_counter() - sealed, 3)
        # the manifest is committed after this call: its timings say where the build's time went
        manifest["timings"] = {
            **wallclock.build_timings(marks, phases, time.time()),
            # generation over every attempt of the build (a rerun's generate is this run's)
            "generate_build": spent.get("generate_seconds", 0.0),
        }

    published = publish_version(
        chain.from_iterable(store.iter_batches("rows", s) for s in (VIEWS, DEMOTED, SPLIT_OTHER)),
        chain.from_iterable(store.iter_batches("rejects", s) for s in (CORPUS, VIEWS)),
        root=cfg.output.root,
        name=cfg.dataset_name,
        manifest=manifest,
        heldout_fraction=cfg.heldout_fraction,
        rows_per_file=cfg.output.rows_per_file,
        before_publish=diagnostics,
        reuse_unchanged=not cfg.output.force_new_version,
        local_dir=cfg.work_dir,
    )
    local_root = cfg.work_dir if is_uri(cfg.output.root) else cfg.output.root
    try:
        exports = [
            str(r.path)
            for r in write_configured_exports(published.path, cfg.output.exports, local_root)
        ]
        if is_uri(cfg.output.root) and exports:
            exports = upload_exports(cfg.output.root, published.path)
    except (CseaugError, OSError) as exc:
        # the version is published: the error must say so, not read as a failed build
        why = os_error_message(exc) if isinstance(exc, OSError) else str(exc)
        raise InputError(
            f"{'kept the unchanged' if published.reused else 'published'} {published.location}, "
            f"but writing its exports failed: {why}; "
            f"`cseaug export {published.name}/{published.version} --format FORMAT` writes "
            "them again"
        ) from exc
    counts = published.manifest["counts"]
    # this run's own times (a reused version's manifest times the build that made it), up to
    # now: publishing is all of this step but the diagnostics, the exports included
    phases["publish"] = round(time.perf_counter() - started - phases.get("diagnostics", 0.0), 3)
    finished_at = time.time()
    return BuildSummary(
        dataset=published.name,
        version=published.version,
        version_dir=published.path,
        rows=counts["rows"],
        aigen=counts["by_split"].get("aigen", 0),
        other=counts["by_split"].get("other", 0),
        rejects=counts["rejects"],
        rejects_by_stage=counts["rejects_by_stage"],
        token_usage=usage,
        seconds=wallclock.wall_seconds(marks, phases, finished_at),
        exports=exports,
        diagnostics_dir=str(published.path / DIAGNOSTICS) if cfg.diagnostics.enabled else None,
        reused_version=f"{published.name}/{published.version}" if published.reused else None,
        location=published.location,
        timings=wallclock.build_timings(marks, phases, finished_at),
        judge_usage=judge_usage,
        finished_at=finished_at,
    )


def generation_seconds(
    marks: dict[str, float], plan_seconds: float, outcomes: list[ShardOutcome], now: float
) -> float:
    """The shards' seconds; at most the wall time from the plan's end to ``now`` (shards on
    several workers overlap, and their seconds add up to more than the wait).

    Example:
        >>> two_workers = [ShardOutcome(i, rows=0, rejects=0, demoted=0, seconds=6.0) for i in (0, 1)]
        >>> generation_seconds({"plan_started": 100.0}, 1.0, two_workers, now=108.0)
        7.0
    """
    generated = round(sum(o.seconds for o in outcomes), 3)
    if wallclock.PLAN_STARTED not in marks:
        return generated
    waited = now - marks[wallclock.PLAN_STARTED] - plan_seconds
    return round(max(0.0, min(generated, waited)), 3)
