"""The ``build-hybrid-dataset`` flow and the ``cseaug build`` command under Prefect's harness."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cseaug.cli import app
from tests.augment.scripted_backend import ScriptedBackend
from tests.fake_openai_server import FakeOpenAIServer
from tests.flows.validations import count_validations
from tests.pipeline.test_build_run import crash, failing_stage

REPO = Path(__file__).resolve().parents[2]


def write_config(path: Path, shared_data: Path, root: Path, base_url: str) -> Path:
    config = yaml.safe_load((REPO / "configs" / "nli-sts.yaml").read_text())
    config["corpus"]["path"] = str(shared_data / "nli" / "nli_triples_snli_devtest.csv")
    config["patterns"]["path"] = str(shared_data / "sts12_train")
    config["llm"] = {"backend": "openai-compatible", "base_url": base_url, "model": "fake"}
    config["output"]["root"] = str(root)
    path.write_text(yaml.safe_dump(config))
    return path


def test_cli_build_runs_the_flow_and_publishes(
    prefect_harness: None, shared_data: Path, tmp_path: Path
) -> None:
    from prefect import get_client

    factory = logging.getLogRecordFactory()
    with FakeOpenAIServer() as server:
        config = write_config(
            tmp_path / "nli-sts.yaml", shared_data, tmp_path / "out", server.base_url
        )
        runner = CliRunner()
        overrides = [
            "--set",
            "sample.size=40",
            "--set",
            "execution.shard_size=100",
            "--set",
            "diagnostics.cs_sample=40",
            "--set",  # the echo answers are one text for every level: the quality gate's case
            "publish.min_pattern_share=0",
        ]

        dry = runner.invoke(app, ["build", "--config", str(config), *overrides, "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert sum(server.counts.values()) == 0

        result = runner.invoke(app, ["build", "--config", str(config), *overrides])
        assert result.exit_code == 0, result.output
        assert sum(server.counts.values()) == 3 * 40
    # The flow itself (not only the `cseaug` command, which CliRunner skips) scrubs the log
    # records of its process: a worker or `flow.serve` process starts there.
    scrubbing = logging.getLogRecordFactory()
    logging.setLogRecordFactory(factory)
    record = scrubbing("t", logging.INFO, __file__, 1, "via %s", ("http://u:p@h/v1",), None)
    assert record.getMessage() == "via http://***@h/v1"

    version = tmp_path / "out" / "datasets" / "nli-sts" / "v0001"
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["counts"]["by_split"]["aigen"] == 40
    # the build's own breakdown (issue 14): Prefect's start is the time from the command
    # handing over the build to the first task
    assert {"prefect_start", "plan", "generate", "publish", "diagnostics", "orchestration"} <= set(
        manifest["timings"]
    )
    assert (version / "diagnostics").is_dir() and any((version / "diagnostics").glob("*.png"))
    assert (tmp_path / "out" / "exports" / "nli-sts" / "v0001").is_dir()

    async def flow_runs_and_artifacts():
        async with get_client() as client:
            runs = await client.read_flow_runs()
            artifacts = await client.read_artifacts()
            return runs, artifacts

    import asyncio

    runs, artifacts = asyncio.run(flow_runs_and_artifacts())
    assert any(r.state and r.state.is_completed() for r in runs)
    assert any(a.key == "diagnostics-nli-sts-v0001" for a in artifacts)


def test_cli_build_reports_a_bad_config_value_before_any_work(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"name": "x", "method": "sts", "corpus": {"path": "c.txt"}}))
    result = CliRunner().invoke(app, ["build", "--config", str(config)])
    assert result.exit_code != 0
    assert "patterns" in str(result.exception) or "patterns" in result.output


def test_a_failed_flow_closes_the_models_its_plan_task_loaded(
    prefect_harness: None, shared_data: Path, tmp_path: Path, monkeypatch
) -> None:
    from cseaug.pipeline.stages import ServedModels
    from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset

    backend = ScriptedBackend(crash)
    monkeypatch.setattr(
        "cseaug.pipeline.stages.make_stage", lambda cfg, served, **_: failing_stage(backend)
    )
    config = write_config(
        tmp_path / "nli-sts.yaml", shared_data, tmp_path / "out", "http://127.0.0.1:1/v1"
    )
    overrides = ["sample.size=20", "diagnostics.enabled=false"]
    with pytest.raises(RuntimeError, match="engine died"):
        # nothing to probe: the stage is the failing one
        build_hybrid_dataset(str(config), overrides, served=ServedModels())
    assert backend.closed


def test_every_deployment_entrypoint_of_prefect_yaml_loads(monkeypatch) -> None:
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(REPO)  # `prefect deploy` runs from the repository root
    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    entrypoints = {d["entrypoint"] for d in deployments}
    assert entrypoints, "prefect.yaml defines no deployment"
    for entrypoint in sorted(entrypoints):
        function = entrypoint.rsplit(":", 1)[1]
        assert load_flow_from_entrypoint(entrypoint).name == function.replace("_", "-")


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.parametrize("edge", ["cseaug build", "deployment run"])
def test_a_build_reads_and_validates_its_config_once_at_its_edge(
    prefect_harness: None, tmp_path: Path, monkeypatch, edge: str
) -> None:
    """`cseaug build` validates the YAML and its --set values once and hands the flow the
    validated config; a deployment run (a config path and overrides) is validated once at the
    flow's start. Neither the flow nor its tasks read or validate the config again."""
    from cseaug.config import RunConfig, loading
    from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset

    monkeypatch.chdir(REPO)
    overrides = [
        "corpus.path=examples/demo_corpus.txt", "sample.size=8", "generate_cse.generator=null",
        "diagnostics.enabled=false", "output.exports=[]", f"output.root={tmp_path}",
    ]  # fmt: skip
    calls = count_validations(monkeypatch, RunConfig, loading)
    if edge == "cseaug build":
        args = ["build", "--config", "configs/generate-cse.yaml"]
        result = CliRunner().invoke(app, [*args, *(f"--set={item}" for item in overrides)])
        assert result.exit_code == 0, result.output
    else:
        build_hybrid_dataset("configs/generate-cse.yaml", overrides)
    assert calls == ["read", "validate"]
    assert (tmp_path / "datasets" / "generate-cse" / "v0001" / "manifest.json").is_file()
