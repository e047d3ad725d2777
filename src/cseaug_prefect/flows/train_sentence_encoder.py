"""The ``train-sentence-encoder`` flow: train an encoder on a published version, show its scores.

Composition only: the work is :func:`cseaug_prefect.tasks.train.train_encoder_task`; the
before/after Spearman table becomes a markdown artifact. ``cseaug train-encoder`` runs this
flow; ``prefect.yaml`` deploys it as ``train-sentence-encoder/wiki-sts-ngcse``. The training
config is validated once, at the flow's edge: ``cseaug train-encoder`` passes the
:class:`~cseaug.trainer.config.TrainConfig` it validated, a deployment run a config path and
``--set``-style overrides, which the flow validates when it starts; the task is given the
validated config.

Prints are not logged (``log_prints=False``): the libraries underneath print, and dill
(through ``datasets``' fingerprinting) disassembles functions with ``dis.dis`` into a
captured ``sys.stdout``, which ``log_prints`` would turn into ~22 log lines of bytecode.
The tasks log through the run logger instead.
"""

# No `from __future__ import annotations`: Prefect validates the flow's parameters against
# its annotations, which must be objects (TrainConfig), not strings, when a worker or
# `flow.serve` loads the flow from its entrypoint.
from typing import Any

from prefect import flow

from cseaug.config import edge_config
from cseaug.secrets import install_log_scrubbing
from cseaug.trainer.config import TrainConfig
from cseaug_prefect.tasks.train import scores_artifact_task, train_encoder_task


@flow(name="train-sentence-encoder", log_prints=False)
def train_sentence_encoder(
    version: str,
    config: TrainConfig | str,
    out: str | None = None,
    root: str = "storage",
    overrides: list[str] | None = None,
    seeds: int = 1,
) -> dict[str, Any]:
    """Train a sentence encoder on a published dataset version.

    Args:
        version: ``name/vNNNN`` or ``name/latest`` under ``root`` (or a version directory).
        config: the validated training config (``cseaug train-encoder`` passes it), or the
            path of a YAML training config (``configs/train/<objective>.yaml``), validated here.
        out: where the model, its card and ``evaluation.json``/``.md`` go (None:
            ``<root>/models/<dataset>-<version>-<objective>``).
        root: the output root holding ``datasets/``.
        overrides: with a path only: ``key.path=value`` strings, as ``cseaug train-encoder
            --set``.
        seeds: train this many seeds (``seed``, ``seed + 1``, ...) into ``<out>/seed-<n>``
            and report their mean ± std (``cseaug train-encoder --seeds``).

    Returns:
        ``{"runs": [record, ...], "summary": ...}``: each run's training record (model
        directory, dataset version and fingerprints, objective, rows, steps, losses, selected
        checkpoint, scores) and, for several seeds, their mean ± std.
    """
    install_log_scrubbing()  # a worker or `flow.serve` process starts here, not in the CLI
    cfg = edge_config(TrainConfig, config, overrides or [])
    result = train_encoder_task(version, root, cfg, out, seeds)
    scores_artifact_task(result)
    return result
