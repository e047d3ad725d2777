"""The compose stack's `deploy` step and a process worker against a real Prefect server.

The `deploy` service's command, taken from docker-compose.yml, runs in a copy of the image's
build context (what ``COPY . /app`` puts in /app) against the test harness's server; a
worker started in another directory then runs one of the deployments it registered.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.stack_files import (
    REPO,
    copy_build_context,
    deployments,
    flow_name,
    interpolate,
    load_yaml,
    read_env_file,
)
from tests.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.prefect

COMPOSE = interpolate(load_yaml(REPO / "docker-compose.yml"), read_env_file(REPO / ".env.example"))
POOL = deployments()[0]["work_pool"]["name"]


def cli_env(home: Path) -> dict[str, str]:
    """The environment of a Prefect CLI process talking to the harness's server."""
    from prefect.settings import PREFECT_API_URL

    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_HOME": str(home),
    }


def run_deploy_service(app: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        COMPOSE["services"]["deploy"]["command"],
        cwd=app,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


async def registered() -> tuple[Any, dict[str, Any]]:
    from prefect import get_client

    async with get_client() as client:
        pool = await client.read_work_pool(POOL)
        found = {}
        for deployment in await client.read_deployments():
            flow = await client.read_flow(deployment.flow_id)
            found[f"{flow.name}/{deployment.name}"] = deployment
        return pool, found


@pytest.fixture(scope="module")
def deployed_app(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build context in a temporary /app, deployed by the compose `deploy` command."""
    app = copy_build_context(tmp_path_factory.mktemp("image") / "app")
    result = run_deploy_service(app, tmp_path_factory.mktemp("prefect-home"))
    assert result.returncode == 0, result.stdout + result.stderr
    return app


def test_deploy_step_registers_every_deployment_paused(deployed_app: Path) -> None:
    pool, found = asyncio.run(registered())

    assert pool.type == "process"
    for expected in deployments():
        name = f"{flow_name(expected['entrypoint'])}/{expected['name']}"
        deployment = found[name]
        assert deployment.work_pool_name == POOL
        assert deployment.parameters == expected["parameters"]
        assert deployment.entrypoint == expected["entrypoint"]
        assert [(s.schedule.cron, s.active) for s in deployment.schedules] == [
            (s["cron"], False) for s in expected["schedules"]
        ], name
        # every run starts in the directory `prefect deploy` ran in: /app in the image
        assert deployment.pull_steps == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(deployed_app)}}
        ]


@pytest.mark.slow
def test_a_worker_started_elsewhere_runs_a_deployment(deployed_app: Path, tmp_path: Path) -> None:
    """Redeploying on an existing pool (every `docker compose up`) works, and a worker whose
    own working directory is not the project still runs the demo build to a version."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    home = tmp_path / "prefect-home"
    again = run_deploy_service(deployed_app, home)
    assert again.returncode == 0, again.stdout + again.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeOpenAIServer() as server:
        overrides = [
            # its own dataset name: the harness's server is shared by the whole session, and
            # other tests look for the demo's diagnostics artifact there
            "name=stack-smoke",
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
            f"output.root={tmp_path / 'out'}",
            # the fake server's answers keep no graded order: this test is about the stack
            "publish.min_pattern_share=0",
        ]
        flow_run = run_deployment(
            "build-hybrid-dataset/demo", parameters={"overrides": overrides}, timeout=0
        )
        worker = subprocess.run(
            ["prefect", "worker", "start", "--pool", POOL, "--run-once"],
            cwd=elsewhere,
            env=cli_env(home),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert worker.returncode == 0, worker.stdout + worker.stderr
        assert sum(server.counts.values()) > 0

    async def final_state():
        async with get_client() as client:
            return (await client.read_flow_run(flow_run.id)).state

    state = asyncio.run(final_state())
    assert state is not None and state.is_completed(), worker.stdout + worker.stderr
    assert (tmp_path / "out" / "datasets" / "stack-smoke" / "v0001" / "manifest.json").is_file()
