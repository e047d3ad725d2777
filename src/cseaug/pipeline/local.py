"""A whole build in this process, without Prefect: plan, every shard, publish.

For tests, notebooks and benchmarks; ``cseaug build`` runs the same three calls as the
Prefect flow ``build-hybrid-dataset`` instead, so that every run shows in Prefect.

Example:
    from cseaug.config import load_config
    run_build(load_config("configs/demo.yaml")).version_dir
    # PosixPath('storage/datasets/demo/v0001')
"""

from __future__ import annotations

from cseaug.config import RunConfig
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.publish import BuildSummary, publish_build
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import generate_shard
from cseaug.pipeline.stages import ServedModels


def run_build(cfg: RunConfig, served: ServedModels | None = None) -> BuildSummary:
    """Build and publish one version of ``cfg``; every step is closed at the end, also on failure.

    ``served``: what the preflight's probes of the LLM endpoints reported (None: the plan
    probes them).

    Raises:
        ConfigError, InputError, BackendError: as the plan, shard and publish steps do.
    """
    with BuildRun(cfg, served=served) as run:
        plan = plan_build(run)
        outcomes = [generate_shard(run, index) for index in range(plan.shards)]
        return publish_build(run, outcomes)
