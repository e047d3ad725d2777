"""Thin Prefect tasks of the build flow: each calls one function of :mod:`cseaug.pipeline`.

Tasks exchange the validated config, the run plan (:class:`~cseaug.pipeline.run.PlanRef`) and
counts, never tables. The tasks of the flow's process get its
:class:`~cseaug.pipeline.run.BuildRun` (models loaded once); a shard task on a Dask or Ray
worker gets the plan only and makes a run of its own for its call. ``generate-shard``
retries once: the LLM response cache makes a retry re-send only what was not answered. No
task caches its result (a run holds models and connections, which Prefect cannot hash).
"""

from __future__ import annotations

from contextlib import nullcontext

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from cseaug.pipeline.plan import plan_build as plan_run
from cseaug.pipeline.publish import BuildSummary
from cseaug.pipeline.publish import publish_build as publish_run
from cseaug.pipeline.run import BuildRun, PlanRef
from cseaug.pipeline.shard import ShardOutcome
from cseaug.pipeline.shard import generate_shard as generate_run_shard
from cseaug.secrets import install_log_scrubbing


@task(name="plan-build", cache_policy=NO_CACHE)
def plan_build(run: BuildRun) -> PlanRef:
    """Check the inputs, load the steps of ``run`` (the flow's, which stays open until the
    flow closes it), clean and sample the corpus, cut it into shards."""
    plan = plan_run(run)
    get_run_logger().info("run %s: %d shard(s) in %s", plan.run_id, plan.shards, plan.path)
    return plan


@task(name="generate-shard", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def generate_shard(plan: PlanRef, index: int, run: BuildRun | None = None) -> ShardOutcome:
    """Write the views of one shard of the sample (one task per shard, never per sentence),
    on the flow's ``run``, or on a run of ``plan`` of its own (a worker process)."""
    install_log_scrubbing()  # a Dask or Ray worker process starts here, not in the flow
    with nullcontext(run) if run is not None else BuildRun.from_plan(plan) as shard_run:
        outcome = generate_run_shard(shard_run, index)
    get_run_logger().info("shard %d: %d rows, %d rejects", index, outcome.rows, outcome.rejects)
    return outcome


@task(name="publish-build", cache_policy=NO_CACHE)
def publish_build(run: BuildRun, outcomes: list[ShardOutcome]) -> BuildSummary:
    """Assemble the hybrid dataset of the flow's ``run``, publish it as an immutable version,
    write its exports."""
    summary = publish_run(run, outcomes)
    get_run_logger().info(summary.message)
    return summary
