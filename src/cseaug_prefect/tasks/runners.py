"""Where the shards of a build run: Prefect's Dask or Ray task runner, from ``execution.runner``.

Nothing here schedules work: :func:`shard_task_runner` only configures the task runner of
``prefect-dask`` (``DaskTaskRunner``) or ``prefect-ray`` (``RayTaskRunner``), a local
cluster of ``runner.workers`` processes or the existing cluster at ``runner.address``, and
Prefect runs one ``generate-shard`` task per shard on it. Every worker runs its shard's
``[stage, quality, judge, *filters, mer]`` and writes its Parquet files into the run store;
plan and publish stay in the flow's process.

Task runs on a worker report to a Prefect server. Without ``PREFECT_API_URL`` the flow runs
on Prefect's temporary local server, and each worker would start a temporary server of its
own (port clashes, orphaned processes): :func:`workers_server` gives the address of the
flow's server, which the flow hands to the workers of a local cluster in the settings
Prefect sends with every task; a remote cluster cannot reach it, so there it asks for a
real server.
See docs/scaling.md, "Running on Dask or Ray".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from prefect.context import FlowRunContext
from prefect.settings import PREFECT_API_URL

from cseaug.config import RunnerConfig
from cseaug.errors import ConfigError, require

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner


def shard_task_runner(runner: RunnerConfig) -> TaskRunner | None:
    """Prefect's task runner for ``runner``, not started yet; None for kind local (the flow
    runs those shards itself).

    A local cluster has ``runner.workers`` single-threaded worker processes, so a worker
    runs one shard at a time, and no dashboard.

    Raises:
        MissingExtraError: prefect-dask or prefect-ray is not installed (extras dask, ray).
    """
    purpose = f"execution.runner {runner.kind}"
    if runner.kind == "dask":
        dask = require("prefect_dask", "dask", purpose)
        if runner.address:
            return dask.DaskTaskRunner(address=runner.address)
        cluster = {"n_workers": runner.workers, "threads_per_worker": 1, "dashboard_address": None}
        # Dask logs its local cluster's start and stop at INFO (tens of lines), which reach
        # Prefect's console handler; its warnings and errors still show.
        logging.getLogger("distributed").setLevel(logging.WARNING)
        return dask.DaskTaskRunner(cluster_kwargs=cluster)
    if runner.kind == "ray":
        ray = require("prefect_ray", "ray", purpose)
        if runner.address:
            return ray.RayTaskRunner(address=runner.address)
        return ray.RayTaskRunner(
            init_kwargs={"num_cpus": runner.workers, "include_dashboard": False}
        )
    return None


def workers_server(runner: RunnerConfig) -> str | None:
    """The Prefect API address to hand the workers of ``runner``; None: they get it with
    Prefect's settings (``PREFECT_API_URL`` is set) or there are no workers (kind local).

    Without ``PREFECT_API_URL`` the flow runs on a temporary server on 127.0.0.1, and the
    workers of a local cluster are told its address. Called inside the build's flow run.

    Raises:
        ConfigError: ``runner.address`` names a remote cluster and no ``PREFECT_API_URL``
            is set (its workers cannot reach a temporary server on this machine).
    """
    if runner.kind == "local" or PREFECT_API_URL.value():
        return None
    if runner.address:
        raise ConfigError(
            f"execution.runner.address: the workers of the {runner.kind} cluster at "
            f"{runner.address} must report to a Prefect server they can reach; start one "
            "(`prefect server start --host 0.0.0.0`) and export PREFECT_API_URL="
            "http://<host>:4200/api here and on the workers"
        )
    return str(FlowRunContext.get().client.api_url)
