"""Thin Prefect tasks of the ``train-sentence-encoder`` flow: train, then show the scores.

Training is one task (one model, one process: a GPU cannot be shared between shards; with
several seeds, one run after the other); it returns the training records (paths, counts,
scores) and, for several seeds, their mean ± std, never the model. Progress lines (dev
scores, and the steps where progress bars are off) go to the task's run logger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from cseaug.dataset import versions
from cseaug.trainer.card import scores_markdown
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.seeds import SEEDS_MARKDOWN, train_seeds
from cseaug.trainer.train import default_model_dir, train_encoder
from cseaug_prefect.tasks.diagnostics import artifact_key


@task(name="train-encoder")
def train_encoder_task(
    version: str, root: str, cfg: TrainConfig, out: str | None, seeds: int = 1
) -> dict[str, Any]:
    """Train a sentence encoder with the validated ``cfg`` on ``version`` (``name/vNNNN``
    under ``root``) into ``out`` (None: ``<root>/models/<dataset>-<version>-<objective>``),
    once per seed.

    Returns:
        ``{"runs": [record, ...], "summary": None}`` for one seed; with several, the models
        are in ``<out>/seed-<n>`` and ``summary`` is :func:`cseaug.trainer.seeds.seed_summary`.
    """
    version_dir = versions.resolve(root, version)
    logger = get_run_logger()
    model_dir = out or default_model_dir(root, version_dir, cfg.objective)
    if seeds > 1:
        result = train_seeds(version_dir, cfg, model_dir, seeds, say=logger.info)
    else:
        result = {"runs": [train_encoder(version_dir, cfg, model_dir, say=logger.info).as_dict()],
                  "summary": None}  # fmt: skip
    for record in result["runs"]:
        logger.info(
            "trained %s on %s (seed %d): %d steps, scores of step %d, model in %s",
            record["objective"], record["dataset"], record["seed"], record["steps"],
            record["selection"]["step"], record["model_dir"],
        )  # fmt: skip
    return result


@task(name="scores-artifact")
def scores_artifact_task(result: dict[str, Any]) -> None:
    """The Spearman tables of the run as a markdown artifact of the flow run (with several
    seeds: their mean ± std, ``seeds.md``)."""
    record = result["runs"][0]
    if result["summary"] is None:
        markdown, where = scores_markdown(record), record["model_dir"]
    else:
        where = str(Path(record["model_dir"]).parent)
        markdown = (Path(where) / SEEDS_MARKDOWN).read_text(encoding="utf-8")
    key = artifact_key("scores", record["dataset"], record["objective"])
    create_markdown_artifact(markdown=markdown, key=key, description=f"STS scores of {where}")
