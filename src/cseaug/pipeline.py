"""The build, as three library calls the Prefect tasks wrap: plan, generate a shard, publish.

1. :func:`plan_build` makes the stage first (so a model that cannot be loaded or an
   endpoint that is misconfigured stops the build before any work), then cleans and samples
   the corpus and cuts the sample into shards of ``execution.shard_size`` sentences in the
   run store ``<output.root>/runs/<dataset>-<fingerprint>``. The plan is a JSON file; tasks
   pass its path.
2. :func:`generate_shard` runs the stage over one shard and stores its rows and rejects. A
   shard already finished by an earlier attempt of the same build is not run again, and the
   LLM response cache means a crashed shard re-sends only what was never answered.
   Anchors whose views failed are recorded in rejects and, when ``sample.include_other``,
   kept as ``other`` rows (they are still corpus sentences of the hybrid dataset). The
   optional filters of :mod:`cseaug.filters` (pattern order, contamination) drop rows to
   rejects after the stage (and contaminated ``other`` rows while planning).
3. :func:`publish_build` streams the generated rows, the ``other`` rows and every reject
   into an immutable version (diagnostics written into it before the atomic rename) and
   writes the configured exports.

Example:
    >>> from cseaug.config import load_config
    >>> cfg = load_config("configs/demo.yaml")  # doctest: +SKIP
    >>> plan = plan_build(cfg)  # doctest: +SKIP
    >>> outcomes = [generate_shard(plan.path, i) for i in range(plan.shards)]  # doctest: +SKIP
    >>> publish_build(plan.path, outcomes).version_dir  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.augment.base import Stage
from cseaug.augment.registry import make_stage, stage_manifest, stage_usage
from cseaug.config import RunConfig, config_fingerprint
from cseaug.corpus.prepare import prepare_corpus
from cseaug.dataset.manifest import build_manifest
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.dataset.shards import RunStore, ShardKind
from cseaug.dataset.writer import PublishedVersion
from cseaug.dataset.writer import publish_build as publish_dataset
from cseaug.errors import InputError
from cseaug.filters import apply_filters, row_filters
from cseaug.secrets import scrub_data

PLAN_FILE = "plan.json"
DIAGNOSTICS = "diagnostics"
VIEWS = "views"
"""Run-store stage folder of the stage's output shards."""
DEMOTED = "demoted"
"""Run-store stage folder of sample anchors whose views failed, kept as ``other`` rows."""


@dataclass(frozen=True)
class PlanRef:
    """What the plan task hands on: where the plan is and how many shards it has."""

    path: str
    run_id: str
    shards: int


@dataclass
class ShardOutcome:
    """Paths and counts of one finished shard (what a task returns instead of tables)."""

    index: int
    rows: int
    rejects: int
    demoted: int
    usage: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    reused: bool = False


_STAGES: dict[str, Stage] = {}
"""Stages of the runs of this process, by plan path: a model is loaded once per run."""


def run_id(cfg: RunConfig) -> str:
    """The run-store name of a build: same config, same store, so a rerun resumes it."""
    return f"{cfg.dataset_name}-{config_fingerprint(cfg)[:12]}"


def _stage_for(plan_path: str, cfg: RunConfig) -> Stage:
    stage = _STAGES.get(plan_path)
    if stage is None:
        stage = _STAGES[plan_path] = make_stage(cfg)
    return stage


def _read_plan(plan_path: str | Path) -> dict[str, Any]:
    path = Path(plan_path)
    if not path.is_file():
        raise InputError(f"run plan {path} not found; start the build again with `cseaug build`")
    return json.loads(path.read_text(encoding="utf-8"))


def _plan_config(plan: dict[str, Any]) -> RunConfig:
    return RunConfig.model_validate(plan["config"])


def _plan_store(plan: dict[str, Any]) -> RunStore:
    return RunStore(plan["config"]["output"]["root"], plan["run_id"])


def plan_build(cfg: RunConfig) -> PlanRef:
    """Check the stage, clean and sample the corpus, and write the shards of the sample.

    Raises:
        ConfigError, InputError, BackendError: before any generation, naming what is wrong.
    """
    started = time.perf_counter()
    store = RunStore(cfg.output.root, run_id(cfg))
    plan_path = str(store.path / PLAN_FILE)
    stage = _stage_for(plan_path, cfg)
    prepared = prepare_corpus(cfg.corpus, cfg.sample, cfg.method)

    size = cfg.execution.shard_size
    shards = max(1, -(-prepared.sample.num_rows // size))
    for index in range(shards):
        store.write("input", index, prepared.sample.slice(index * size, size))
    other_filters = row_filters(cfg, generated=False)
    filtered_rejects: list[pa.Table] = []

    def other_rows() -> Iterator[pa.Table]:
        for batch in prepared.other_batches():
            result = apply_filters(pa.Table.from_batches([batch]), other_filters)
            filtered_rejects.append(result.rejects)
            yield result.rows

    store.write("rows", 0, other_rows() if cfg.sample.include_other else [], stage=SPLIT_OTHER)
    # filtered_rejects is complete here: writing the other rows consumed the generator.
    store.write("rejects", 0, [prepared.rejects, *filtered_rejects], stage="corpus")

    plan = {
        "run_id": store.path.name,
        "config": cfg.model_dump(mode="json"),
        "shards": shards,
        "corpus": {"name": prepared.name, "stats": prepared.stats, "sha256": prepared.input_sha256},
        "other_rows": prepared.num_other if cfg.sample.include_other else 0,
        "stage": stage_manifest(stage),
        "seconds": {"plan": round(time.perf_counter() - started, 3)},
    }
    store.path.mkdir(parents=True, exist_ok=True)
    plan_text = json.dumps(scrub_data(plan), indent=2, default=str)
    Path(plan_path).write_text(plan_text, encoding="utf-8")
    return PlanRef(path=plan_path, run_id=store.path.name, shards=shards)


def _demoted_rows(inputs: pa.Table, produced: pa.Table) -> pa.Table:
    """Anchors of ``inputs`` that the stage did not return, as ``other`` rows."""
    missing = inputs.filter(
        pc.invert(pc.is_in(inputs.column("id"), value_set=produced.column("id")))
    )
    split = pa.repeat(pa.scalar(SPLIT_OTHER), missing.num_rows)
    method = pa.nulls(missing.num_rows, pa.string())
    missing = missing.set_column(missing.schema.get_field_index("split"), "split", split)
    return missing.set_column(missing.schema.get_field_index("method"), "method", method)


def generate_shard(plan_path: str, index: int) -> ShardOutcome:
    """Run the stage over shard ``index`` of a plan and store its rows and rejects."""
    plan = _read_plan(plan_path)
    store = _plan_store(plan)
    if store.exists("rows", index, VIEWS) and store.exists("rejects", index, VIEWS):
        return ShardOutcome(
            index=index,
            rows=_rows_in(store, "rows", index, VIEWS),
            rejects=_rows_in(store, "rejects", index, VIEWS),
            demoted=_rows_in(store, "rows", index, DEMOTED),  # written before the views
            reused=True,
        )
    cfg = _plan_config(plan)
    stage = _stage_for(plan_path, cfg)
    started = time.perf_counter()
    before = stage_usage(stage)
    inputs = store.read("input", index)
    result = stage(inputs)
    demoted = _demoted_rows(inputs, result.rows) if cfg.sample.include_other else inputs.slice(0, 0)
    filtered = apply_filters(result.rows, row_filters(cfg, generated=True))
    # Demoted rows first, the views last: a shard counts as done once its views exist.
    store.write("rows", index, demoted, stage=DEMOTED)
    store.write("rejects", index, [result.rejects, filtered.rejects], stage=VIEWS)
    store.write("rows", index, filtered.rows, stage=VIEWS)
    after = stage_usage(stage)
    return ShardOutcome(
        index=index,
        rows=filtered.rows.num_rows,
        rejects=result.rejects.num_rows + filtered.rejects.num_rows,
        demoted=demoted.num_rows,
        usage={k: after[k] - before.get(k, 0) for k in after},
        stats=result.stats,
        seconds=round(time.perf_counter() - started, 3),
    )


def _rows_in(store: RunStore, kind: ShardKind, index: int, stage: str) -> int:
    """Rows of one finished shard, from its Parquet footer."""
    return pq.ParquetFile(store.shard_path(kind, index, stage)).metadata.num_rows


@dataclass
class BuildSummary:
    """What a finished build prints and returns."""

    dataset: str
    version: str
    version_dir: Path
    rows: int
    aigen: int
    other: int
    rejects: int
    rejects_by_stage: dict[str, dict[str, int]]
    token_usage: dict[str, int]
    seconds: float
    exports: list[str]
    diagnostics_dir: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["version_dir"] = str(self.version_dir)
        return out


def _sum_usage(outcomes: list[ShardOutcome]) -> dict[str, int]:
    total: dict[str, int] = {}
    for outcome in outcomes:
        for key, value in outcome.usage.items():
            total[key] = total.get(key, 0) + value
    return total


def _rows(store: RunStore) -> Iterator[pa.RecordBatch]:
    yield from store.iter_batches("rows", VIEWS)
    yield from store.iter_batches("rows", DEMOTED)
    yield from store.iter_batches("rows", SPLIT_OTHER)


def _rejects(store: RunStore) -> Iterator[pa.RecordBatch]:
    yield from store.iter_batches("rejects", "corpus")
    yield from store.iter_batches("rejects", VIEWS)


def publish_build(plan_path: str, outcomes: list[ShardOutcome]) -> BuildSummary:
    """Publish the finished shards of a plan as a new immutable version, then export it."""
    from cseaug.dataset.export import write_configured_exports
    from cseaug.diagnostics.version import write_diagnostics

    started = time.perf_counter()
    plan = _read_plan(plan_path)
    cfg = _plan_config(plan)
    store = _plan_store(plan)
    missing = [i for i in range(plan["shards"]) if not store.exists("rows", i, VIEWS)]
    if missing:
        raise InputError(
            f"run {plan['run_id']}: shards {missing} are not finished; nothing published"
        )
    stage_info = plan["stage"]
    usage = _sum_usage(outcomes)
    manifest = build_manifest(
        cfg,
        inputs={"corpus": {"name": plan["corpus"]["name"], "files": plan["corpus"]["sha256"]}},
        prompts=stage_info.get("prompts", ()),
        example_set=stage_info.get("example_set"),
        model=stage_info.get("model"),
        token_usage=usage,
        timings={
            "plan": plan["seconds"]["plan"],
            "generate": round(sum(o.seconds for o in outcomes), 3),
        },
        extra={
            "corpus_stats": plan["corpus"]["stats"],
            "demoted_to_other": sum(o.demoted for o in outcomes),
        },
    )

    def diagnostics(staging: Path) -> None:
        if cfg.diagnostics.enabled:
            write_diagnostics(
                staging,
                staging / DIAGNOSTICS,
                cfg.diagnostics,
                cache_dir=Path(cfg.output.root) / "cache" / "embeddings",
                title=cfg.dataset_name,
            )

    published: PublishedVersion = publish_dataset(
        cfg, _rows(store), _rejects(store), manifest, before_publish=diagnostics
    )
    exports = [
        str(r.path)
        for r in write_configured_exports(published.path, cfg.output.exports, cfg.output.root)
    ]
    stage = _STAGES.pop(plan_path, None)
    if stage is not None:
        stage.close()
    counts = published.manifest["counts"]
    return BuildSummary(
        dataset=published.name,
        version=published.version,
        version_dir=published.path,
        rows=counts["rows"],
        aigen=counts["by_split"].get("aigen", 0),
        other=counts["by_split"].get("other", 0),
        rejects=counts["rejects"],
        rejects_by_stage=counts["rejects_by_stage"],
        token_usage=usage,
        seconds=round(
            time.perf_counter()
            - started
            + plan["seconds"]["plan"]
            + sum(o.seconds for o in outcomes),
            3,
        ),
        exports=exports,
        diagnostics_dir=str(published.path / DIAGNOSTICS) if cfg.diagnostics.enabled else None,
    )
