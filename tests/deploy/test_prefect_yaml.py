"""prefect.yaml: a deployment per shipped config, entrypoints and parameters that resolve,
schedules that start paused, and docs that run only deployments that exist."""

from __future__ import annotations

import ast
import re

import pytest

from tests.deploy.stack_files import REPO, deployments, flow_name, load_yaml

DEPLOYMENTS = deployments()


def by_name() -> dict[str, dict]:
    return {
        f"{flow_name(deployment['entrypoint'])}/{deployment['name']}": deployment
        for deployment in DEPLOYMENTS
    }


def test_every_shipped_config_has_a_build_deployment() -> None:
    builds = {
        deployment["name"]: deployment["parameters"]["config"]
        for deployment in DEPLOYMENTS
        if flow_name(deployment["entrypoint"]) == "build-hybrid-dataset"
    }
    shipped = {path.stem: f"configs/{path.name}" for path in (REPO / "configs").glob("*.yaml")}
    assert builds == shipped


def test_the_generator_training_has_its_deployment() -> None:
    training = by_name()["train-vaegpt-sim/train-vaegpt-sim"]
    assert training["parameters"] == {"config": "configs/vaegpt/train.yaml", "overrides": []}


def test_the_encoder_training_trains_on_a_deployed_build() -> None:
    """The example trains NGCSE's objective on the newest version of a build deployed here."""
    from cseaug.config import load_config
    from cseaug.trainer.config import load_train_config

    training = by_name()["train-sentence-encoder/wiki-sts-ngcse"]
    dataset = training["parameters"]["version"].split("/")[0]
    build = by_name()[f"build-hybrid-dataset/{dataset}"]
    method = load_config(REPO / build["parameters"]["config"]).method
    objective = load_train_config(REPO / training["parameters"]["config"]).objective
    assert (method, objective) == ("sts", "ngcse")


def test_deployment_names_are_unique() -> None:
    assert len(by_name()) == len(DEPLOYMENTS)


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d["name"])
def test_entrypoint_and_parameters_resolve(deployment: dict) -> None:
    path, _, function = deployment["entrypoint"].partition(":")
    assert flow_name(deployment["entrypoint"]), f"{path} has no @flow function {function}"
    tree = ast.parse((REPO / path).read_text())
    (definition,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == function
    ]
    accepted = {argument.arg for argument in definition.args.args}
    assert set(deployment["parameters"]) <= accepted
    assert (REPO / deployment["parameters"]["config"]).is_file()
    assert all(isinstance(item, str) for item in deployment["parameters"]["overrides"])


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d["name"])
def test_every_deployment_has_a_paused_schedule_on_the_shared_pool(deployment: dict) -> None:
    from prefect.client.schemas.schedules import CronSchedule

    assert deployment["schedules"], "an example schedule shows how a team runs it"
    for schedule in deployment["schedules"]:
        assert schedule["active"] is False
        CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])  # validates both
    assert deployment["work_pool"]["name"] == DEPLOYMENTS[0]["work_pool"]["name"]


def test_runs_start_where_the_deployments_were_made() -> None:
    """No pull step: `prefect deploy` records its own working directory instead (checked
    against a server in test_prefect_deploy.py)."""
    assert load_yaml(REPO / "prefect.yaml")["pull"] is None


def test_docs_run_only_deployments_that_exist() -> None:
    pages = [REPO / "README.md", REPO / "prefect.yaml", *sorted((REPO / "docs").glob("*.md"))]
    named = {
        (page.name, match)
        for page in pages
        for match in re.findall(
            r"prefect deployment (?:run|inspect|schedule \w+) '([^']+)'", page.read_text()
        )
    }
    assert ("deployment.md", "build-hybrid-dataset/wiki-sts") in named
    assert {(page, name) for page, name in named if name not in by_name()} == set()
