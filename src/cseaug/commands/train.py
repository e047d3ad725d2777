"""``cseaug train-encoder``: train a sentence encoder on a published version (docs/trainer.md).

Runs the Prefect flow ``train-sentence-encoder`` so that every run shows in Prefect (an
ephemeral local server when no ``PREFECT_API_URL`` is set), like ``cseaug build``.

Example:
    $ cseaug train-encoder --version wiki-sts/v0001 --config configs/train/ngcse.yaml
    $ cseaug train-encoder --version wiki-sts/latest --config configs/train/ngcse.yaml \\
        --set max_steps=200 --set evaluation.data_dir=../shared/data --out storage/models/try
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cseaug.commands.build import refuse_secrets_in_overrides
from cseaug.commands.quiet_logs import quiet_expected_tracebacks
from cseaug.dataset import versions


def train_encoder_command(
    version: Annotated[
        str,
        typer.Option(
            "--version",
            "-v",
            help="Dataset version: NAME/vNNNN, NAME/latest or a version directory.",
        ),
    ],
    config: Annotated[
        Path, typer.Option("--config", "-c", help="Training config, e.g. configs/train/ngcse.yaml.")
    ],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override a config value: key.path=value (repeatable)."),
    ] = None,
    root: Annotated[
        str,
        typer.Option(
            "--root",
            help="Output root holding datasets/ (output.root of the build): a directory or an "
            "fsspec URI such as s3://bucket/prefix.",
        ),
    ] = "storage",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Model directory (default: <root>/models/<dataset>-<version>-<objective>)."
        ),
    ] = None,
) -> None:
    """Train a sentence encoder on a published version (runs the Prefect flow train-sentence-encoder)."""
    from cseaug.dataset.protect import refuse_dataset_path
    from cseaug.trainer.config import load_train_config
    from cseaug.trainer.evaluation import scores_table

    overrides = list(set_ or [])
    load_train_config(config, overrides)  # a bad value fails before Prefect starts
    refuse_secrets_in_overrides(overrides)
    version_dir = versions.resolve(root, version)  # an unknown version fails here too
    if out is not None:
        refuse_dataset_path(out, root, "--out")
    from cseaug_prefect.flows.train_sentence_encoder import train_sentence_encoder

    quiet_expected_tracebacks()  # Prefect's console logging exists once the flow is imported

    record = train_sentence_encoder(
        version=str(version_dir), config=str(config), out=str(out) if out else None,
        root=str(root), overrides=overrides,
    )  # fmt: skip
    console = Console()
    console.print(
        f"trained {record['objective']} on {record['dataset']}: {record['steps']} steps, "
        f"{record['rows_per_second']:.1f} rows/s; model in {record['model_dir']}"
    )
    if record["scores"]["after"]:
        console.print(scores_table(record["scores"]["before"], record["scores"]["after"]))


def register(app: typer.Typer) -> None:
    """Add ``train-encoder`` to the CLI."""
    app.command("train-encoder")(train_encoder_command)
