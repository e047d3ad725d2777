"""Plan a build: load its steps, clean and sample the corpus, cut the sample into shards.

The steps are made first, so that a model or endpoint that fails stops the build before
any work. The sample is cut into shards of ``execution.shard_size`` sentences in the run
store; the rest of the corpus (when ``sample.include_other``) runs through the ``other``
rows' steps into the store too. Each step of the plan that takes long shows its progress
(reading and cleaning, deduplicating and sampling, the other rows' steps). The plan is a JSON file beside them; Prefect tasks pass its
:class:`PlanRef`.

Example:
    from cseaug.pipeline.run import BuildRun, PlanRef
    from cseaug.config import load_config
    with BuildRun(load_config("configs/demo.yaml")) as run:
        plan_build(run).shards  # 1
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa

from cseaug import wallclock
from cseaug.corpus.prepare import prepare_corpus, warn_short_sample
from cseaug.dataset.schema import SPLIT_OTHER
from cseaug.diagnostics.views import cs_sample_limit, in_cs_sample
from cseaug.pipeline.run import BuildRun, Plan, PlanRef
from cseaug.pipeline.shard import VIEWS
from cseaug.progress import progress_bar
from cseaug.step import merged_manifest, merged_results, run_steps

CORPUS = "corpus"
"""Run-store stage folder of the corpus rejects and the other rows' filter rejects."""


def plan_build(run: BuildRun) -> PlanRef:
    """Load the steps of ``run``, clean and sample the corpus, and write the shards of the sample.

    Args:
        run: the build run (its steps are made here if they were not yet).

    Raises:
        ConfigError, InputError, BackendError: before any generation, naming what is wrong.
    """
    run.clock.mark(wallclock.PLAN_STARTED)
    started = time.perf_counter()
    cfg, store = run.cfg, run.store
    stage_manifest = merged_manifest([step.manifest() for step in run.view_steps()])
    prepared = prepare_corpus(cfg.corpus, cfg.sample, cfg.method)
    warn_short_sample(prepared)

    size = cfg.execution.shard_size
    shards = max(1, -(-prepared.sample.num_rows // size))
    for index in range(shards):
        store.write("input", index, prepared.sample.slice(index * size, size))
    diag = cfg.diagnostics
    size = None if diag.pattern_filter in ("cs", "both") else diag.cs_sample  # a filter: all
    anchors = prepared.sample.select(["id", "sentence"]).to_pydict()
    run.cs_limit = cs_sample_limit(anchors["id"], size, diag.seed)
    if any(not store.exists("rows", index, VIEWS) for index in range(shards)):
        # generation is ahead: the encoder worker loads meanwhile and embeds the anchors of
        # the CS sample, and the views as they arrive when every anchor is in it
        sampled = in_cs_sample(anchors["id"], run.cs_limit, diag.seed)
        texts = [text for text, take in zip(anchors["sentence"], sampled, strict=True) if take]
        run.start_encoder(texts, stream_views=run.cs_limit is None)
    other_steps = run.other_steps()
    filtered_rejects: list[pa.Table] = []

    def other_rows() -> Iterator[pa.Table]:
        with progress_bar(
            f"Checking the other rows of {prepared.name}", total=prepared.num_other, unit="rows"
        ) as bar:
            for batch in prepared.other_batches():
                rows = pa.Table.from_batches([batch])
                result = merged_results(other_steps, run_steps(other_steps, rows), rows)
                filtered_rejects.append(result.rejects)
                bar.advance(rows.num_rows)
                yield result.rows

    store.write("rows", 0, other_rows() if cfg.sample.include_other else [], stage=SPLIT_OTHER)
    # filtered_rejects is complete here: writing the other rows consumed the generator.
    store.write("rejects", 0, [prepared.rejects, *filtered_rejects], stage=CORPUS)

    Plan(
        run_id=store.path.name,
        config=cfg.model_dump(mode="json"),
        shards=shards,
        corpus={"name": prepared.name, "stats": prepared.stats, "sha256": run.inputs["corpus"]},
        other_rows=prepared.num_other if cfg.sample.include_other else 0,
        stage=stage_manifest,
        seconds={"plan": round(time.perf_counter() - started, 3)},
    ).write(run.plan_path)
    return PlanRef(
        path=run.plan_path,
        run_id=store.path.name,
        shards=shards,
        config=cfg,
        served=run.served,
        cs_limit=run.cs_limit,
    )
