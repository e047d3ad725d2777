"""``cseaug train-vaegpt``, ``cseaug synonyms`` and ``cseaug score`` (docs/vaegpt.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from cseaug.dataset.atomic import write_text_atomic
from cseaug.dataset.protect import refuse_dataset_path
from cseaug.errors import InputError

app = typer.Typer()


@app.command("train-vaegpt")
def train_command(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Training config YAML (default: built-in defaults)."),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Override a key, e.g. --set optim.max_steps=100 or --set output_dir=DIR (repeatable).",
        ),
    ] = None,
) -> None:
    """Train a VAEGPT-Sim synonym generator on SICK / MRPC pairs (resumes from its last checkpoint)."""
    from cseaug.vaegpt.config import load_train_config
    from cseaug.vaegpt.train import train_vaegpt

    cfg = load_train_config(config, list(overrides or []))
    refuse_dataset_path(cfg.output_dir, None, "output_dir")
    result = train_vaegpt(cfg)
    console = Console()
    console.print(
        f"trained {result.steps} step(s); generator: {result.best_dir or result.final_dir}"
    )
    if result.best_rouge is not None:
        console.print(f"best validation Avg-ROUGE: {result.best_rouge:.4f}")
    if "steps_per_second" in result.stats:
        console.print(f"steps/s: {result.stats['steps_per_second']:.3f}")
    console.print(f"metrics: {result.metrics_path}")


@app.command("synonyms")
def synonyms_command(
    generator: Annotated[
        Path, typer.Option(help="A trained generator (best/ or final/ of a training run).")
    ],
    input: Annotated[
        Path, typer.Option(help="Sentences: .txt (one per line) or .csv/.tsv/.jsonl/.parquet.")
    ],
    output: Annotated[Path, typer.Option(help="JSONL output: {source, generations} per sentence.")],
    column: Annotated[str, typer.Option(help="Sentence column of a table input.")] = "sentence",
    num_return_sequences: Annotated[
        int,
        typer.Option(
            "--num-return-sequences", "-n", help="Candidates per sentence (at most --num-beams)."
        ),
    ] = 1,
    num_beams: Annotated[int, typer.Option(help="Beams of beam search with sampling.")] = 3,
    max_new_tokens: Annotated[int, typer.Option(help="Maximum tokens of one synonym.")] = 64,
    batch_size: Annotated[int, typer.Option(help="Sentences per generate() call.")] = 32,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N.")] = "auto",
) -> None:
    """Write synonyms of sentences with a trained VAEGPT-Sim (beam search with sampling)."""
    refuse_dataset_path(output, None, "--output")
    from cseaug.config import SynonymGenerationConfig
    from cseaug.readers.tables import read_table, table_column
    from cseaug.vaegpt.generate import VAEGPTSimGenerator

    if input.suffix.lower() == ".txt":
        if not input.is_file():
            raise InputError(f"file not found: {input}")
        sentences = [
            line.strip() for line in input.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    else:
        sentences = [str(s) for s in table_column(read_table(input), column, input, "--column")]
    config = SynonymGenerationConfig(
        num_beams=num_beams,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        seed=seed,
        device=device,
    )
    candidates = VAEGPTSimGenerator.load(generator, config).generate(
        sentences, num_return_sequences
    )
    write_text_atomic(
        output,
        "".join(
            json.dumps({"source": source, "generations": generated}, ensure_ascii=False) + "\n"
            for source, generated in zip(sentences, candidates, strict=True)
        ),
    )
    Console().print(f"wrote {len(sentences)} sentence(s) x {num_return_sequences} to {output}")


@app.command("score")
def score_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="Table of sources, targets and generations (.csv/.tsv/.jsonl/.parquet)."
        ),
    ],
    source_column: Annotated[
        str, typer.Option(help="Column of the generator's inputs.")
    ] = "source",
    target_column: Annotated[
        str,
        typer.Option(
            help="Column of the reference synonyms (give the source column to score against it)."
        ),
    ] = "target",
    generation_columns: Annotated[
        list[str] | None,
        typer.Option(
            "--generation-column",
            help="Column of generations; repeat for several candidates, or name one list column. Default: generation.",
        ),
    ] = None,
    encoder: Annotated[
        str, typer.Option(help="Sentence encoder for cosine similarity (name or path).")
    ] = ("all-MiniLM-L6-v2"),
    no_cosine: Annotated[
        bool, typer.Option("--no-cosine", help="Leave cosine similarity out.")
    ] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Also write the scorecard as JSON here.")
    ] = None,
) -> None:
    """Score generations as the VAEGPT-Sim paper's Table 2 (Avg-ROUGE, cosine, diversity, TTR, average, deficiency)."""
    if json_path is not None:
        refuse_dataset_path(json_path, None, "--json")
    from cseaug.metrics.quality import score_generations
    from cseaug.readers.tables import read_table, table_column

    table = read_table(file)
    sources = table_column(table, source_column, file, "--source-column")
    targets = table_column(table, target_column, file, "--target-column")
    columns = [
        table_column(table, name, file, "--generation-column")
        for name in generation_columns or ["generation"]
    ]
    generations = []
    for row in zip(*columns, strict=True):
        candidates: list[str] = []
        for value in row:
            candidates.extend(value if isinstance(value, list) else [value])
        generations.append([str(c) for c in candidates if c is not None])
    card = score_generations(sources, targets, generations, encoder=None if no_cosine else encoder)
    values = card.as_dict()
    title = f"Generation quality of {file.name} (x100)"
    out = Table("metric", Column("value", justify="right"), title=title)
    for key, value in values.items():
        if key in ("pairs", "generations"):
            out.add_row(key, str(value))
        else:
            out.add_row(key, "-" if value is None else f"{100 * value:.2f}")
    Console().print(out)
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(values, indent=2) + "\n")
