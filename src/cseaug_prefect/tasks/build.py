"""Thin Prefect tasks of the build flow: each calls one function of :mod:`cseaug.pipeline`.

Tasks exchange the validated config, the run plan (:class:`~cseaug.pipeline.run.PlanRef`:
its path, counts, that config and what the LLM endpoints reported when they were probed)
and counts, never tables; no task reads a YAML file or probes an endpoint twice. The
flow owns an :class:`~cseaug.pipeline.run.OpenRuns` and passes it to every task: the plan
task opens the build's :class:`~cseaug.pipeline.run.BuildRun` (its models loaded once) in
it, the shard and publish tasks of the flow's process use that run, and the flow closes it
by leaving the ``with`` block, so a failed build frees its models too. A task on a worker of
a Dask or Ray cluster gets an empty copy of the registry and makes a run of its own, on the
plan's config and served models, for its call. ``generate-shard`` retries once: the LLM response cache makes a
retry re-send only what was not answered.
"""

from __future__ import annotations

from prefect import get_run_logger, task

from cseaug.config import RunConfig
from cseaug.pipeline.plan import plan_build as plan_run
from cseaug.pipeline.publish import publish_build as publish_run
from cseaug.pipeline.run import OpenRuns, PlanRef
from cseaug.pipeline.shard import ShardOutcome
from cseaug.pipeline.shard import generate_shard as generate_run_shard
from cseaug.pipeline.stages import ServedModels
from cseaug.secrets import install_log_scrubbing


@task(name="plan-build")
def plan_build(cfg: RunConfig, runs: OpenRuns, served: ServedModels | None = None) -> PlanRef:
    """Check the inputs, load the steps (given what the LLM endpoints reported: ``served``,
    else probing them), clean and sample the corpus, cut it into shards; the build's run stays
    open in ``runs`` (the flow's) until the flow closes it."""
    plan = plan_run(runs.open(cfg, served))
    get_run_logger().info("run %s: %d shard(s) in %s", plan.run_id, plan.shards, plan.path)
    return plan


@task(name="generate-shard", retries=1, retry_delay_seconds=5)
def generate_shard(plan: PlanRef, index: int, runs: OpenRuns) -> ShardOutcome:
    """Write the views of one shard of the sample (one task per shard, never per sentence),
    on the run open in ``runs``, or on a run of its own where none is (a worker process)."""
    install_log_scrubbing()  # a Dask or Ray worker process starts here, not in the flow
    with runs.use(plan) as run:
        outcome = generate_run_shard(run, index)
    get_run_logger().info("shard %d: %d rows, %d rejects", index, outcome.rows, outcome.rejects)
    return outcome


@task(name="publish-build")
def publish_build(plan: PlanRef, outcomes: list[ShardOutcome], runs: OpenRuns) -> dict:
    """Assemble the hybrid dataset, publish it as an immutable version, write its exports."""
    with runs.use(plan) as run:
        summary = publish_run(run, outcomes)
    get_run_logger().info(summary.message)
    return summary.as_dict()
