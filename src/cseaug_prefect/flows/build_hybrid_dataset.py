"""The ``build-hybrid-dataset`` flow: corpus -> sample shards -> views -> published version.

Composition only: every step is a task in :mod:`cseaug_prefect.tasks.build`, every
computation is in :mod:`cseaug.pipeline`. The config is validated once, at the flow's edge
(``cseaug build`` passes the validated :class:`~cseaug.config.RunConfig`; a deployment run a
path and overrides). The flow owns the build's :class:`~cseaug.pipeline.run.BuildRun`, passes
it to the tasks of its process and closes it, whether the build succeeds or not. With
``execution.runner`` dask or ray the shards run in the sub-flow ``generate-shards`` on
Prefect's Dask or Ray task runner (docs/prefect.md, docs/scaling.md).
"""

# No `from __future__ import annotations`: Prefect validates the flows' parameters against
# their annotations, which must be objects (RunConfig, PlanRef), not strings, when a worker or
# `flow.serve` loads the flow from its entrypoint.
from prefect import flow, unmapped
from prefect.settings import PREFECT_API_URL, temporary_settings

from cseaug.config import RunConfig, edge_config
from cseaug.pipeline.publish import BuildSummary
from cseaug.pipeline.run import BuildRun, PlanRef
from cseaug.pipeline.shard import ShardOutcome
from cseaug.pipeline.stages import ServedModels
from cseaug.secrets import install_log_scrubbing
from cseaug.wallclock import Clock
from cseaug_prefect.tasks.build import generate_shard, plan_build, publish_build
from cseaug_prefect.tasks.diagnostics import artifact_key, diagnostics_artifact_task
from cseaug_prefect.tasks.runners import shard_task_runner, workers_server


@flow(name="build-hybrid-dataset", log_prints=True)
def build_hybrid_dataset(
    config: RunConfig | str,
    overrides: list[str] | None = None,
    served: ServedModels | None = None,
    clock: Clock | None = None,
) -> BuildSummary:
    """Build and publish one dataset version.

    Args:
        config: the validated run config (``cseaug build`` passes it), or the path of a YAML
            run config (relative to the working directory), validated here.
        overrides: with a path only: ``key.path=value`` strings, as ``cseaug build --set``.
        served: what the LLM endpoints reported when ``cseaug build``'s preflight probed
            them; None (a deployment run): the plan task probes them, once.
        clock: the build's wall-clock marks, which ``cseaug build`` started (its process's
            start, the hand-over to Prefect); None: the flow's run starts one.

    Returns:
        The build summary: version directory, row and reject counts, token usage, exports.
    """
    install_log_scrubbing()  # a worker or `flow.serve` process starts here, not in the CLI
    cfg = edge_config(RunConfig, config, overrides or [])
    # Before any work: a missing extra, or a remote cluster with no server to report to.
    runner = cfg.execution.runner
    cluster, server = shard_task_runner(runner), workers_server(runner)
    with BuildRun(cfg, served=served, clock=clock) as run:
        plan = plan_build(run)
        if cluster is None:
            outcomes = [generate_shard(plan, index, run) for index in range(plan.shards)]
        else:
            with temporary_settings(updates={PREFECT_API_URL: server} if server else None):
                outcomes = generate_shards.with_options(task_runner=cluster)(plan)
        summary = publish_build(run, outcomes)
    if summary.diagnostics_dir:
        diagnostics_artifact_task(
            summary.diagnostics_dir,
            key=artifact_key("diagnostics", summary.dataset, summary.version),
            title=f"{summary.dataset}/{summary.version}",
        )
    return summary


@flow(name="generate-shards")
def generate_shards(plan: PlanRef) -> list[ShardOutcome]:
    """One ``generate-shard`` task per shard on this flow's task runner (a Dask or Ray cluster).

    Every shard runs to its end before a failure is raised, so each finished shard is in the
    run store and a rerun of the build reuses it. Its tasks run in the cluster's worker
    processes, which get the plan only (a flow's parameters must be JSON, and the parent's
    :class:`~cseaug.pipeline.run.BuildRun` holds models and connections): each makes a run of
    its own on the plan's validated config.
    """
    futures = generate_shard.map(unmapped(plan), range(plan.shards))
    futures.wait()
    return futures.result()
