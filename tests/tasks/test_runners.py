"""``execution.runner``: the setting, and the Prefect task runner and server it gives the shards."""

from __future__ import annotations

import sys

import pytest

from cseaug.config import RunConfig, RunnerConfig, config_fingerprint
from cseaug.errors import ConfigError, MissingExtraError
from cseaug_prefect.tasks.runners import shard_task_runner, workers_server

SKI = {
    "name": "d",
    "method": "ski",
    "corpus": {"path": "c.txt"},
    "llm": {"backend": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
}


def config(execution: dict, **llm: str) -> RunConfig:
    return RunConfig.model_validate({**SKI, "llm": {**SKI["llm"], **llm}, "execution": execution})


def test_a_runner_name_alone_is_a_local_cluster_of_two_workers() -> None:
    runner = config({"runner": "dask"}).execution.runner
    assert (runner.kind, runner.address, runner.workers) == ("dask", None, 2)
    assert config({}).execution.runner.kind == "local"


def test_the_runner_does_not_change_the_fingerprint_so_a_build_resumes_on_another() -> None:
    local = config({})
    assert config_fingerprint(config({"runner": "ray"})) == config_fingerprint(local)
    remote = {"kind": "dask", "address": "tcp://10.0.0.1:8786"}
    assert config_fingerprint(config({"runner": remote, "cache_path": "/x"})) == (
        config_fingerprint(local)
    )


@pytest.mark.parametrize(
    ("execution", "llm", "message"),
    [
        ({"runner": {"address": "tcp://h:8786"}}, {}, "needs kind dask or ray"),
        ({"runner": "dask"}, {"backend": "vllm"}, "one vLLM engine per worker"),
        ({"runner": {"kind": "ray", "address": "ray://h:10001"}}, {}, "execution.cache_path"),
    ],
)
def test_a_runner_that_does_not_fit_the_build_is_refused(
    execution: dict, llm: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        config(execution, **llm)


def test_a_remote_cluster_with_a_local_cache_path_is_accepted() -> None:
    runner = {"kind": "dask", "address": "tcp://h:8786"}
    assert config({"runner": runner, "cache_path": "/var/tmp/llm.sqlite"}).execution.runner.address


def test_the_local_runner_has_no_task_runner() -> None:
    assert shard_task_runner(RunnerConfig()) is None


def test_dask_runs_a_local_cluster_of_single_threaded_workers_or_joins_one() -> None:
    pytest.importorskip("prefect_dask")
    from prefect_dask import DaskTaskRunner

    local = shard_task_runner(RunnerConfig(kind="dask", workers=3))
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["n_workers"] == 3
    assert local.cluster_kwargs["threads_per_worker"] == 1
    remote = shard_task_runner(RunnerConfig(kind="dask", address="tcp://10.0.0.1:8786"))
    assert remote.address == "tcp://10.0.0.1:8786"


def test_ray_runs_a_local_instance_of_n_cpus_or_joins_one() -> None:
    pytest.importorskip("prefect_ray")
    from prefect_ray import RayTaskRunner

    local = shard_task_runner(RunnerConfig(kind="ray", workers=3))
    assert isinstance(local, RayTaskRunner)
    assert local.init_kwargs["num_cpus"] == 3
    remote = shard_task_runner(RunnerConfig(kind="ray", address="ray://10.0.0.1:10001"))
    assert remote.address == "ray://10.0.0.1:10001"


@pytest.mark.parametrize(("kind", "extra"), [("dask", "prefect_dask"), ("ray", "prefect_ray")])
def test_a_missing_extra_names_it(kind: str, extra: str, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, extra, None)  # import fails as when it is not installed
    with pytest.raises(MissingExtraError, match=f"cseaug\\[{kind}\\]"):
        shard_task_runner(RunnerConfig(kind=kind))


def test_a_remote_cluster_needs_a_prefect_server_its_workers_reach() -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    remote = RunnerConfig(kind="dask", address="tcp://10.0.0.1:8786")
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        with pytest.raises(ConfigError, match="export PREFECT_API_URL"):
            workers_server(remote)
        assert workers_server(RunnerConfig()) is None
    with temporary_settings(updates={PREFECT_API_URL: "http://10.0.0.2:4200/api"}):
        assert workers_server(remote) is None  # the workers get it with Prefect's settings
