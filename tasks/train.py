"""Thin Prefect tasks of the ``train-sentence-encoder`` flow: train, then show the scores.

Training is one task (one model, one process: a GPU cannot be shared between shards); it
returns the training record (paths, counts, scores), never the model.
"""

from __future__ import annotations

import re
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from cseaug.dataset import versions
from cseaug.trainer.card import scores_markdown
from cseaug.trainer.config import load_train_config
from cseaug.trainer.train import default_model_dir, train_encoder


@task(name="train-encoder")
def train_encoder_task(
    version: str, root: str, config: str, overrides: list[str], out: str | None
) -> dict[str, Any]:
    """Train a sentence encoder on ``version`` (``name/vNNNN`` under ``root``) into ``out``
    (None: ``<root>/models/<dataset>-<version>-<objective>``)."""
    version_dir = versions.resolve(root, version)
    cfg = load_train_config(config, overrides)
    result = train_encoder(
        version_dir, cfg, out or default_model_dir(root, version_dir, cfg.objective)
    )
    get_run_logger().info(
        "trained %s on %s: %d steps, model in %s",
        result.record["objective"],
        result.record["dataset"],
        result.record["steps"],
        result.model_dir,
    )
    return result.as_dict()


def scores_key(record: dict[str, Any]) -> str:
    """The artifact key of a run's scores: ``scores-<dataset>-<version>-<objective>``.

    Example:
        >>> scores_key({"dataset": "Wiki.STS/v0003", "objective": "ngcse"})
        'scores-wiki-sts-v0003-ngcse'
    """
    text = f"scores-{record['dataset']}-{record['objective']}".lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


@task(name="scores-artifact")
def scores_artifact_task(record: dict[str, Any]) -> None:
    """The before/after Spearman table as a markdown artifact of the flow run."""
    create_markdown_artifact(
        markdown=scores_markdown(record),
        key=scores_key(record),
        description=f"STS scores of {record['model_dir']}",
    )
