"""The ``execution`` section: how the work is cut and where it runs (docs/scaling.md); it
never changes the data."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cseaug.config.base import StrictModel, short_for


class RunnerConfig(StrictModel):
    """Where the shards of a build run (docs/scaling.md, "Running on Dask or Ray");
    ``runner: dask`` is short for ``runner: {kind: dask}``."""

    kind: Literal["local", "dask", "ray"] = Field(
        "local",
        description="local: every shard in the flow's process, one after another; dask / ray: "
        "each shard a Prefect task on a Dask or Ray cluster (extras 'dask', 'ray').",
    )
    address: str | None = Field(
        None,
        description="Address of an existing cluster (Dask scheduler tcp://host:8786, Ray "
        "ray://host:10001); None: a local cluster started for the build.",
    )
    workers: int = Field(
        2, ge=1, description="Worker processes of the local cluster (not used with an address)."
    )

    @model_validator(mode="after")
    def _address_needs_a_cluster(self) -> RunnerConfig:
        if self.address and self.kind == "local":
            raise ValueError("execution.runner.address needs kind dask or ray")
        return self


class ExecutionConfig(StrictModel):
    """How the work is cut and run; does not change the data, so not part of the fingerprint."""

    shard_size: int = Field(
        5_000, ge=100, le=100_000, description="Sentences per Prefect task (one task per shard)."
    )
    dry_run: bool = Field(False, description="Count requests and tokens, publish nothing.")
    cache_path: str | None = Field(
        None, description="LLM response cache; default <work_dir>/cache/llm.sqlite."
    )
    work_dir: str | None = Field(
        None,
        description="Local directory for the run store, the LLM and embedding caches, staging "
        "and local copies of versions; default output.root when it is local, else "
        "$XDG_CACHE_HOME/cseaug/roots/<protocol>/<path> (an object store holds no SQLite).",
    )
    runner: Annotated[RunnerConfig, short_for("kind")] = Field(
        default_factory=RunnerConfig,
        description="Where the shards run: local, dask or ray (a local cluster, or the one at "
        "runner.address).",
    )
