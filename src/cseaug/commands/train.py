"""``cseaug train-encoder``: train a sentence encoder on a published version (docs/trainer.md),
through the Prefect flow ``train-sentence-encoder``, the config, version and model checked
before Prefect starts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cseaug.commands.build import importing_the_flow, say
from cseaug.commands.options import RootOption
from cseaug.commands.stopping import one_line_on_stop
from cseaug.dataset import versions
from cseaug.errors import ConfigError
from cseaug.wallclock import Clock

app = typer.Typer()


def check_model(name: str) -> None:
    """A ConfigError now when the encoder ``name`` cannot be had (the build's check,
    :func:`cseaug.hub.model_problem`, after the hub's probe)."""
    from cseaug.encoders.minilm import MINILM_NAMES
    from cseaug.hub import go_offline_unless_reachable, is_local_name, model_problem

    if name in MINILM_NAMES:
        return  # the packaged copy, or the hub at the pinned revision (encoders.minilm)
    if not is_local_name(name) and (notice := go_offline_unless_reachable()):
        say(notice)
    problem = model_problem(name, "model")
    if problem:
        raise ConfigError(f"{problem} (e.g. --set model=all-MiniLM-L6-v2)")


NOT_RESUMABLE = "no model was written; run the same command again to train from the start"
"""What a stopped ``cseaug train-encoder`` says it kept: a training run does not resume."""


@app.command("train-encoder")
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
    root: RootOption = "storage",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Model directory (default: <root>/models/<dataset>-<version>-<objective>)."
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Train this many seeds (seed, seed+1, ...) into <out>/seed-<n> and report the "
            "mean ± std of each score (NGCSE reports 3).",
        ),
    ] = 1,
) -> None:
    """Train a sentence encoder on a published version (runs the Prefect flow train-sentence-encoder)."""
    from cseaug.dataset.protect import refuse_dataset_path
    from cseaug.trainer.card import selection_line
    from cseaug.trainer.config import load_train_config
    from cseaug.trainer.evaluation import scores_table
    from cseaug.trainer.seeds import summary_table
    from cseaug.trainer.train import refuse_foreign_pooling

    # the run's one validation, before Prefect starts (a bad value, a secret): the flow is given cfg
    cfg = load_train_config(config, list(set_ or []))
    version_dir = versions.resolve(root, version)  # an unknown version fails here too
    if out is not None:
        refuse_dataset_path(out, root, "--out")
    check_model(cfg.model)
    refuse_foreign_pooling(cfg)
    with one_line_on_stop(lambda: NOT_RESUMABLE):
        with importing_the_flow(Clock()):  # as `cseaug build`: a Ctrl-C does not stop the server
            from cseaug_prefect.flows.train_sentence_encoder import train_sentence_encoder
        result = train_sentence_encoder(
            version=str(version_dir), config=cfg, out=str(out) if out else None,
            root=str(root), seeds=seeds
        )  # fmt: skip
    console = Console()
    for record in result["runs"]:
        rows = ", ".join(f"{name} {count:,}" for name, count in record["training_rows"].items())
        console.print(
            f"trained {record['objective']} (seed {record['seed']}) on {record['dataset']}: "
            f"{record['steps']} steps on rows {rows}, {record['rows_per_second']:.1f} rows/s; "
            f"{selection_line(record)}; model in {record['model_dir']}",
            highlight=False,
        )
    if result["summary"] is not None:
        console.print(summary_table(result["summary"]))
    elif result["runs"][0]["scores"]["after"]:
        record = result["runs"][0]
        console.print(scores_table(record["scores"]["before"], record["scores"]["after"]))
