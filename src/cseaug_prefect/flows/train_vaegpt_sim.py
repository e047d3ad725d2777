"""The ``train-vaegpt-sim`` flow: train the VAEGPT-Sim synonym generator that Generate-CSE uses.

Composition only: the work is :func:`cseaug_prefect.tasks.vaegpt.train_vaegpt_task`. Run it ad hoc with
``python -m cseaug_prefect.flows.train_vaegpt_sim configs/vaegpt/train.yaml`` or serve it as a deployment.
The training config is validated once, at the flow's start (a
:class:`~cseaug.vaegpt.config.VAEGPTTrainConfig` passed in is used as it is); the task is
given the validated config.
"""

# No `from __future__ import annotations`: Prefect validates the flow's parameters against
# its annotations, which must be objects (VAEGPTTrainConfig), not strings, when a worker or
# `flow.serve` loads the flow from its entrypoint.
import sys
from typing import Any

from prefect import flow

from cseaug.config import edge_config
from cseaug.secrets import install_log_scrubbing
from cseaug.vaegpt.config import VAEGPTTrainConfig
from cseaug_prefect.tasks.vaegpt import train_vaegpt_task


@flow(name="train-vaegpt-sim", log_prints=True)
def train_vaegpt_sim(
    config: VAEGPTTrainConfig | str | None = None, overrides: list[str] | None = None
) -> dict[str, Any]:
    """Train (or resume training) a VAEGPT-Sim generator.

    Args:
        config: a validated training config, or the path of a YAML training config
            (``configs/vaegpt/train.yaml``), validated here; None: defaults.
        overrides: with a path or None only: ``key.path=value`` strings, as
            ``cseaug train-vaegpt --set``.

    Returns:
        The generator's directories, steps, best validation Avg-ROUGE and speed.
    """
    install_log_scrubbing()  # a worker or `flow.serve` process starts here, not in the CLI
    return train_vaegpt_task(edge_config(VAEGPTTrainConfig, config, overrides or []))


if __name__ == "__main__":
    train_vaegpt_sim(sys.argv[1] if len(sys.argv) > 1 else None, sys.argv[2:])
