"""The build flow on Prefect's Dask and Ray task runners: a local 2-worker cluster publishes
the same bytes as the local runner (the goldens of tests/pipeline/test_byte_identical.py).

The flow runs without ``PREFECT_API_URL``, as ``cseaug build`` does on a machine with no
Prefect server: its workers must report to the flow's temporary server instead of each
starting one of their own (docs/scaling.md, "Running on Dask or Ray").
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fake_openai_server import FakeOpenAIServer
from tests.pipeline.test_byte_identical import (
    GOLDENS,
    PYARROW_VERSION,
    Places,
    fingerprint,
    golden_policy,
    substitute,
)

GOLDEN = "wiki-nli"
"""An LLM build of three shards, with the contamination and MER pattern-order filters and
demoted rows: the shards' work is what runs on the cluster."""


def golden_config(shared_data: Path, server: FakeOpenAIServer, root: Path) -> dict:
    import pyarrow

    if pyarrow.__version__ != PYARROW_VERSION:
        pytest.skip(f"the goldens were written by pyarrow {PYARROW_VERSION}")
    places = Places(shared_data.parent, root / "no-models", server)
    return substitute(GOLDENS[GOLDEN]["config"], places.for_root(root / "storage"))


def build_on(runner: str, config: dict, tmp_path: Path) -> Path:
    """Run the flow on ``runner`` (a local 2-worker cluster) without PREFECT_API_URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset

    path = tmp_path / f"{GOLDEN}.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        summary = build_hybrid_dataset(str(path), [f"execution.runner.kind={runner}"])
    return summary.version_dir


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.shared_data
def test_a_dask_cluster_resumes_a_local_build_and_publishes_the_same_bytes(
    prefect_harness: None, shared_data: Path, tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    """A build started with the local runner and stopped after its first shard is resumed by
    `cseaug build` on a Dask cluster (``run_build_command``, what the command runs after
    ``load_config``), without PREFECT_API_URL: the first shard is kept, the rest is generated,
    the bytes are the goldens'; no worker starts a Prefect server of its own; and the LLM
    endpoint is probed once by the command's preflight, whose report the plan and the shards
    on the workers reuse (see :func:`test_a_build_probes_its_llm_endpoint_once`)."""
    pytest.importorskip("prefect_dask")
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from cseaug.commands.build import run_build_command
    from cseaug.config import RunConfig, load_config
    from cseaug.pipeline.plan import plan_build
    from cseaug.pipeline.run import BuildRun
    from cseaug.pipeline.shard import VIEWS, generate_shard

    with FakeOpenAIServer(policy=golden_policy) as server:
        config = golden_config(shared_data, server, tmp_path)
        # A build started with the local runner: its first shard finished, then it stopped.
        with BuildRun(RunConfig.model_validate(config)) as run:
            assert plan_build(run).shards == 3
            generate_shard(run, 0)
            first = run.store.shard_path("rows", 0, VIEWS).stat()
            shard_zero_requests = sum(server.counts.values())
        probes = server.state.model_requests

        path = tmp_path / f"{GOLDEN}.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        with temporary_settings(restore_defaults={PREFECT_API_URL}):
            run_build_command(load_config(path, ["execution.runner.kind=dask"]), dry_run=False)
        (version,) = (tmp_path / "storage" / "datasets" / GOLDEN).glob("v0*")

        assert fingerprint(version) == GOLDENS[GOLDEN]["published"]
        again = run.store.shard_path("rows", 0, VIEWS).stat()
        assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
        assert 0 < shard_zero_requests < sum(server.counts.values())
        assert server.state.model_requests - probes == 1
    output = capfd.readouterr()
    assert "Starting temporary server" not in output.out + output.err, (
        "a worker started a Prefect server of its own"
    )
    assert asyncio.run(last_shards_subflow()) == ["Completed"] * 3


async def last_shards_subflow() -> list[str]:
    """The states of the ``generate-shard`` task runs of the last ``generate-shards`` sub-flow."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    async with get_client() as client:
        (subflow,) = await client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["generate-shards"])),
            sort=FlowRunSort.START_TIME_DESC,
            limit=1,
        )
        shards = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[subflow.id]))
        )
    return [run.state.name for run in shards if run.name.startswith("generate-shard")]


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.shared_data
def test_a_ray_cluster_publishes_the_same_bytes(
    prefect_harness: None, shared_data: Path, tmp_path: Path
) -> None:
    """A deployment run (the flow called with a config path, as a worker calls it) on a Ray
    cluster: the bytes are the goldens', and the LLM endpoint is probed once, by the plan
    task, whose report the shards on the Ray workers reuse (see
    :func:`test_a_build_probes_its_llm_endpoint_once`)."""
    pytest.importorskip("prefect_ray")
    with FakeOpenAIServer(policy=golden_policy) as server:
        version = build_on("ray", golden_config(shared_data, server, tmp_path), tmp_path)
        assert server.state.model_requests == 1
    assert fingerprint(version) == GOLDENS[GOLDEN]["published"]


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.shared_data
def test_a_build_probes_its_llm_endpoint_once(
    prefect_harness: None, shared_data: Path, tmp_path: Path
) -> None:
    """The LLM endpoint is probed (``GET /models``) once per build: by `cseaug build`'s
    preflight, which hands the flow what it reported, or, in a deployment run, by the plan
    task. The plan, the shards in the flow's process and those on a cluster's workers reuse
    it, and the published bytes are the goldens' (the same backend identity in every cache
    key and in the manifest's ``model.llm``). Here `cseaug build` with the local runner; the
    Dask test above asserts it for `cseaug build` on a Dask cluster, the Ray test for a
    deployment run on a Ray cluster (each of those builds costs a minute: one build asserts
    both).

    `cseaug build` is run from its validated config on (``run_build_command``, what the
    command runs after ``load_config``): Prefect's console handler outlives a CliRunner's
    captured stream, so a second CliRunner build in one process cannot log."""
    from cseaug.commands.build import run_build_command
    from cseaug.config import load_config

    with FakeOpenAIServer(policy=golden_policy) as server:
        config = golden_config(shared_data, server, tmp_path)
        path = tmp_path / f"{GOLDEN}.yaml"
        path.write_text(json.dumps(config), encoding="utf-8")
        run_build_command(load_config(path, ["execution.runner.kind=local"]), dry_run=False)
        (version,) = (tmp_path / "storage" / "datasets" / GOLDEN).glob("v0*")
        assert server.state.model_requests == 1
    assert fingerprint(version) == GOLDENS[GOLDEN]["published"]


@pytest.mark.prefect
@pytest.mark.shared_data
def test_a_remote_cluster_without_a_prefect_server_stops_before_any_work(
    prefect_harness: None, shared_data: Path, tmp_path: Path
) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from typer.testing import CliRunner

    from cseaug.cli import app
    from cseaug.errors import ConfigError

    with FakeOpenAIServer(policy=golden_policy) as server:
        path = tmp_path / f"{GOLDEN}.yaml"
        path.write_text(json.dumps(golden_config(shared_data, server, tmp_path)))
        remote = [
            "--set",
            "execution.runner={kind: dask, address: 'tcp://127.0.0.1:9'}",
            "--set",
            f"execution.cache_path={tmp_path / 'llm.sqlite'}",
        ]
        with temporary_settings(restore_defaults={PREFECT_API_URL}):
            result = CliRunner().invoke(app, ["build", "--config", str(path), *remote])
    # `cseaug` (cli.main) prints a ConfigError as one line with exit status 2.
    assert isinstance(result.exception, ConfigError), result.output
    assert "export PREFECT_API_URL" in str(result.exception)
    assert not (tmp_path / "storage").exists(), "nothing is planned"
