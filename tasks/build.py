"""Thin Prefect tasks of the build flow: each calls one function of :mod:`cseaug.build.run`.

Tasks exchange the run plan's path and counts, never tables. ``generate-shard`` retries
once: the LLM response cache makes a retry re-send only what was not answered.
"""

from __future__ import annotations

from prefect import get_run_logger, task

from cseaug.build import run as pipeline
from cseaug.config import load_config


@task(name="plan-build")
def plan_build(config: str, overrides: list[str]) -> pipeline.PlanRef:
    """Validate the config and inputs, clean and sample the corpus, cut the sample into shards."""
    plan = pipeline.plan_build(load_config(config, overrides))
    get_run_logger().info("run %s: %d shard(s) in %s", plan.run_id, plan.shards, plan.path)
    return plan


@task(name="generate-shard", retries=1, retry_delay_seconds=5)
def generate_shard(plan_path: str, index: int) -> pipeline.ShardOutcome:
    """Write the views of one shard of the sample (one task per shard, never per sentence)."""
    outcome = pipeline.generate_shard(plan_path, index)
    get_run_logger().info("shard %d: %d rows, %d rejects", index, outcome.rows, outcome.rejects)
    return outcome


@task(name="publish-build")
def publish_build(plan_path: str, outcomes: list[pipeline.ShardOutcome]) -> dict:
    """Assemble the hybrid dataset, publish it as an immutable version, write its exports."""
    summary = pipeline.publish_build(plan_path, outcomes)
    get_run_logger().info(
        "published %s (%d rows, %d rejects)", summary.version_dir, summary.rows, summary.rejects
    )
    return summary.as_dict()
