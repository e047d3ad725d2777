"""Thin Prefect tasks of the build flow: each calls one function of :mod:`cseaug.pipeline`.

Tasks exchange the run plan's path and counts, never tables. The flow owns an
:class:`~cseaug.pipeline.run.OpenRuns` and passes it to every task: the plan task opens the
build's :class:`~cseaug.pipeline.run.BuildRun` (its models loaded once) in it, the shard and
publish tasks of the flow's process use that run, and the flow closes it by leaving the
``with`` block, so a failed build frees its models too. A task on a worker of a Dask or Ray
cluster gets an empty copy of the registry and makes a run of its own for its call.
``generate-shard`` retries once: the LLM response cache makes a retry re-send only what
was not answered.
"""

from __future__ import annotations

from prefect import get_run_logger, task

from cseaug.config import load_config
from cseaug.pipeline.plan import PlanRef
from cseaug.pipeline.plan import plan_build as plan_run
from cseaug.pipeline.publish import publish_build as publish_run
from cseaug.pipeline.run import OpenRuns
from cseaug.pipeline.shard import ShardOutcome
from cseaug.pipeline.shard import generate_shard as generate_run_shard
from cseaug.secrets import install_log_scrubbing


@task(name="plan-build")
def plan_build(config: str, overrides: list[str], runs: OpenRuns) -> PlanRef:
    """Validate the config and inputs, load the steps, clean and sample the corpus, cut it
    into shards; the build's run stays open in ``runs`` (the flow's) until the flow closes it."""
    plan = plan_run(runs.open(load_config(config, overrides)))
    get_run_logger().info("run %s: %d shard(s) in %s", plan.run_id, plan.shards, plan.path)
    return plan


@task(name="generate-shard", retries=1, retry_delay_seconds=5)
def generate_shard(plan_path: str, index: int, runs: OpenRuns) -> ShardOutcome:
    """Write the views of one shard of the sample (one task per shard, never per sentence),
    on the run open in ``runs``, or on a run of its own where none is (a worker process)."""
    install_log_scrubbing()  # a Dask or Ray worker process starts here, not in the flow
    with runs.use(plan_path) as run:
        outcome = generate_run_shard(run, index)
    get_run_logger().info("shard %d: %d rows, %d rejects", index, outcome.rows, outcome.rejects)
    return outcome


@task(name="publish-build")
def publish_build(plan_path: str, outcomes: list[ShardOutcome], runs: OpenRuns) -> dict:
    """Assemble the hybrid dataset, publish it as an immutable version, write its exports."""
    with runs.use(plan_path) as run:
        summary = publish_run(run, outcomes)
    get_run_logger().info(summary.message)
    return summary.as_dict()
