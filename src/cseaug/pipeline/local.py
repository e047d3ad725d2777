"""A whole build in this process, without Prefect (tests, notebooks, benchmarks): the three
calls ``cseaug build`` runs as the Prefect flow ``build-hybrid-dataset``.

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
    """Build and publish one version of ``cfg``, every step closed at the end; ``served``: what
    the preflight's probes of the LLM endpoints reported (None: the plan probes them)."""
    with BuildRun(cfg, served=served) as run:
        plan = plan_build(run)
        outcomes = [generate_shard(run, index) for index in range(plan.shards)]
        return publish_build(run, outcomes)
