"""Thin Prefect task of the ``train-vaegpt-sim`` flow: calls :func:`cseaug.vaegpt.train.train_vaegpt`.

Training resumes from its newest checkpoint by itself, so the task has no Prefect retries:
rerunning the flow continues where a failed run stopped.
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task

from cseaug.vaegpt.config import VAEGPTTrainConfig
from cseaug.vaegpt.train import train_vaegpt


@task(name="train-vaegpt")
def train_vaegpt_task(cfg: VAEGPTTrainConfig) -> dict[str, Any]:
    """Train (or resume) a VAEGPT-Sim generator with the validated ``cfg``; returns its paths
    and figures, not the model."""
    result = train_vaegpt(cfg)
    summary = {
        "final_dir": str(result.final_dir),
        "best_dir": str(result.best_dir) if result.best_dir else None,
        "steps": result.steps,
        "best_rouge": result.best_rouge,
        "metrics_path": str(result.metrics_path),
        **{k: v for k, v in result.stats.items() if k != "data"},
    }
    get_run_logger().info(
        "trained %d step(s); generator in %s",
        result.steps,
        summary["best_dir"] or summary["final_dir"],
    )
    return summary
