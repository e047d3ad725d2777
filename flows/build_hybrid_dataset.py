"""The ``build-hybrid-dataset`` flow: corpus -> sample shards -> views -> published version.

Composition only: every step is a task in :mod:`cseaug_prefect.tasks.build`, every computation is in
:mod:`cseaug.build`. Tasks pass the path of the run plan and counts, never tables; the
models the plan task loaded are closed in a ``finally``, whether the build succeeds or not.
"""

from __future__ import annotations

from prefect import flow

from cseaug.secrets import install_log_scrubbing
from cseaug_prefect.tasks.build import close_build, generate_shard, plan_build, publish_build
from cseaug_prefect.tasks.diagnostics import artifact_key, diagnostics_artifact_task


@flow(name="build-hybrid-dataset", log_prints=True)
def build_hybrid_dataset(config: str, overrides: list[str] | None = None) -> dict:
    """Build and publish one dataset version from a YAML config.

    Args:
        config: path of the run config (relative to the working directory).
        overrides: ``key.path=value`` strings, as ``cseaug build --set``.

    Returns:
        The build summary: version directory, row and reject counts, token usage, exports.
    """
    install_log_scrubbing()  # a worker or `flow.serve` process starts here, not in the CLI
    plan = plan_build(config, list(overrides or []))
    try:
        outcomes = [generate_shard(plan.path, index) for index in range(plan.shards)]
        summary = publish_build(plan.path, outcomes)
    finally:
        close_build(plan.path)
    if summary["diagnostics_dir"]:
        diagnostics_artifact_task(
            summary["diagnostics_dir"],
            key=artifact_key(summary["dataset"], summary["version"]),
            title=f"{summary['dataset']}/{summary['version']}",
        )
    return summary
