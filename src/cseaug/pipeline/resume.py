"""What a stopped build leaves for its rerun, in words: every finished shard in its run store
and every LLM answer received in the response cache, which ``cseaug build`` says when stopped.

Example:
    kept_for_rerun(load_config("configs/demo.yaml"))
    # 'kept 1 of 3 shards in storage/runs/demo-3f2a... and 412 LLM answers in storage/cache/llm.sqlite; run the same command again to resume'
"""

from __future__ import annotations

from cseaug.config import RunConfig
from cseaug.dataset.shards import RunStore
from cseaug.llm.cache import build_spending
from cseaug.pipeline.inputs import input_fingerprints
from cseaug.pipeline.run import PLAN_FILE, read_plan, run_id
from cseaug.pipeline.shard import VIEWS


def kept_for_rerun(cfg: RunConfig) -> str:
    """What the run store and the response cache of ``cfg``'s build hold now, and how to go on."""
    run = run_id(cfg, input_fingerprints(cfg))
    store = RunStore(cfg.work_dir, run)
    answers = build_spending(cfg.cache_path, run).get("answers", 0)
    kept = [f"{answers:,} LLM answers in {cfg.cache_path}"] if answers else []
    if (store.path / PLAN_FILE).is_file():
        shards = read_plan(store.path / PLAN_FILE).shards
        finished = sum(store.exists("rows", index, VIEWS) for index in range(shards))
        kept.insert(0, f"{finished} of {shards} shards in {store.path}")
    return f"kept {' and '.join(kept) if kept else 'nothing yet'}; run the same command again to resume"
