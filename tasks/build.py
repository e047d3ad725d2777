"""Thin Prefect tasks of the build flow: each calls one function of :mod:`cseaug.build`.

Tasks exchange the run plan's path and counts, never tables. The plan task opens the
build's :class:`~cseaug.build.run.BuildRun` (its models loaded once) in :data:`OPEN_RUNS`;
the shard and publish tasks of the same process use it, and the flow closes it with
:func:`close_build` in a ``finally``, so a failed build frees its models too.
``generate-shard`` retries once: the LLM response cache makes a retry re-send only what
was not answered.
"""

from __future__ import annotations

from prefect import get_run_logger, task

from cseaug.build.plan import PlanRef
from cseaug.build.plan import plan_build as plan_run
from cseaug.build.publish import publish_build as publish_run
from cseaug.build.run import OpenRuns
from cseaug.build.shard import ShardOutcome
from cseaug.build.shard import generate_shard as generate_run_shard
from cseaug.config import load_config
from cseaug.secrets import install_log_scrubbing

OPEN_RUNS = OpenRuns()
"""The build runs the plan tasks of this process opened, until their flows close them."""


@task(name="plan-build")
def plan_build(config: str, overrides: list[str]) -> PlanRef:
    """Validate the config and inputs, load the steps, clean and sample the corpus, cut it into shards."""
    run = OPEN_RUNS.open(load_config(config, overrides))
    try:
        plan = plan_run(run)
    except BaseException:
        OPEN_RUNS.close(run.plan_path)
        raise
    get_run_logger().info("run %s: %d shard(s) in %s", plan.run_id, plan.shards, plan.path)
    return plan


@task(name="generate-shard", retries=1, retry_delay_seconds=5)
def generate_shard(plan_path: str, index: int) -> ShardOutcome:
    """Write the views of one shard of the sample (one task per shard, never per sentence)."""
    install_log_scrubbing()  # a Dask or Ray worker process starts here, not in the flow
    with OPEN_RUNS.use(plan_path) as run:
        outcome = generate_run_shard(run, index)
    get_run_logger().info("shard %d: %d rows, %d rejects", index, outcome.rows, outcome.rejects)
    return outcome


@task(name="publish-build")
def publish_build(plan_path: str, outcomes: list[ShardOutcome]) -> dict:
    """Assemble the hybrid dataset, publish it as an immutable version, write its exports."""
    with OPEN_RUNS.use(plan_path) as run:
        summary = publish_run(run, outcomes)
    get_run_logger().info(summary.message)
    return summary.as_dict()


def close_build(plan_path: str) -> None:
    """Close the build run the plan task opened in this process (its models, engines, GPU
    memory); the flow calls it in a ``finally``. Not a task: it must run even when the
    flow is failing."""
    OPEN_RUNS.close(plan_path)
