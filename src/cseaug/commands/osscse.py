"""``cseaug negate``, ``cseaug backtranslate``, ``cseaug mer``: the OssCSE steps alone
(docs/osscse.md), on inputs read and cleaned as a build reads its corpus."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from cseaug.commands.options import SetOption, config_section
from cseaug.config import BacktranslationConfig, NegationConfig
from cseaug.dataset.protect import refuse_dataset_path
from cseaug.errors import ConfigError, InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from cseaug.step import Step, StepResult

app = typer.Typer()

InputArgument = Annotated[
    Path,
    typer.Argument(
        help="Sentences: .txt (one per line) or .csv/.tsv/.jsonl/.parquet (see --column)."
    ),
]
ColumnOption = Annotated[str, typer.Option("--column", help="Sentence column of a table input.")]
OutputOption = Annotated[
    Path, typer.Option("--output", "-o", help="Results file: .parquet or .jsonl.")
]
RejectsOption = Annotated[
    Path | None,
    typer.Option("--rejects", help="Rejects file (default: <output stem>.rejects<suffix>)."),
]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="Run config whose section gives the settings.")
]


def read_sentences(path: Path, column: str) -> tuple[pa.Table, pa.Table]:
    """Canonical rows of the sentences of a text file or a table column, read, cleaned and
    deduplicated as a build's corpus is, and the rejects."""
    from cseaug.config import CorpusConfig, SampleConfig
    from cseaug.corpus.prepare import prepare_corpus
    from cseaug.readers.corpus import detect_format

    is_text = detect_format(path) == "text" if path.exists() else True
    corpus = CorpusConfig(path=str(path), text_column=None if is_text else column)
    # A sample at least as large as the corpus is the whole corpus, in corpus order.
    everything = SampleConfig(size=2**62, include_other=False)
    prepared = prepare_corpus(corpus, everything, method="osscse")
    return prepared.sample, prepared.rejects


def check_output(output: Path) -> None:
    """Refuse a result path with a suffix no writer knows, or inside a published version."""
    from cseaug.dataset.tables import check_table_path

    check_table_path(output)
    refuse_dataset_path(output, None, "--output")


def checked_outputs(output: Path, rejects: Path | None) -> Path:
    """:func:`check_output`, and the rejects path (``--rejects`` or
    ``<output stem>.rejects<suffix>``), refused inside a published version."""
    check_output(output)
    rejects = rejects or output.with_name(f"{output.stem}.rejects{output.suffix}")
    refuse_dataset_path(rejects, None, "--rejects")
    return rejects


def run_step(
    make_stage: Callable[[], Step],
    input: Path,
    column: str,
    output: Path,
    rejects: Path,
    before: list[str],
    after: list[str],
) -> tuple[StepResult, int]:
    """Run the step ``make_stage()`` on the sentences of ``input`` (:func:`read_sentences`),
    add the MER of its view, and write the results (the ``before`` columns, the step's
    details, the ``after`` columns) and every rejected row; the step's result and the number
    of unreadable input lines."""
    import pyarrow as pa

    from cseaug.dataset.tables import write_table
    from cseaug.pipeline.mer import MERStep

    rows, corpus_rejects = read_sentences(input, column)
    with closing(make_stage()) as stage:
        result = stage(rows)
    with_mer = MERStep()(result.rows).rows
    assert result.details is not None
    table = pa.Table.from_arrays(
        [
            *with_mer.select(before).columns,
            *result.details.columns,
            *with_mer.select(after).columns,
        ],
        names=[*before, *result.details.column_names, *after],
    )
    write_table(table, output)
    write_table(pa.concat_tables([corpus_rejects, result.rejects]), rejects)
    return result, corpus_rejects.num_rows


def _counts_table(title: str, counts: dict[str, int], total: int) -> Table:
    table = Table(
        "", Column("sentences", justify="right"), Column("share", justify="right"), title=title
    )
    for key, count in counts.items():
        table.add_row(key, str(count), f"{count / total:.1%}" if total else "-")
    return table


@app.command("negate")
def negate_command(
    input: InputArgument,
    output: OutputOption = Path("negated.parquet"),
    column: ColumnOption = "sentence",
    rejects: RejectsOption = None,
    config: ConfigOption = None,
    settings: SetOption = None,
) -> None:
    """Negate sentences at their dependency root (OssCSE Step 1); refused ones go to rejects with a reason."""
    from cseaug.augment.negation import NegationStage, Negator

    rejects = checked_outputs(output, rejects)
    cfg, _ = config_section(NegationConfig, "negation", config, settings)
    result, unreadable = run_step(
        lambda: NegationStage(Negator.from_config(cfg)),
        input,
        column,
        output,
        rejects,
        before=["id", "sentence", "negative"],
        after=["mer_negative"],
    )

    stats = result.stats
    console = Console()
    console.print(_counts_table("rules", stats["rules"], stats["sentences"]))
    console.print(_counts_table("refusals", stats["refusals"], stats["sentences"]))
    console.print(
        f"negated {stats['negated']} of {stats['sentences']} sentence(s) "
        f"(share negated {stats['share_negated']:.1%}) with {cfg.spacy_model}; "
        f"{unreadable} input line(s) unreadable or empty"
    )
    console.print(f"results: {output}\nrejects: {rejects}")


def chosen_pivots(
    values: list[str], configured: dict[str, tuple[str, str]]
) -> dict[str, tuple[str, str]]:
    """The pivots ``--pivot`` names: each a configured one (``de``) or ``de=FORWARD,BACKWARD``."""
    chosen = {}
    for value in values:
        name, given, models = value.partition("=")
        pair = tuple(model.strip() for model in models.split(","))
        if given and (len(pair) != 2 or not all(pair)):
            raise ConfigError(
                f"--pivot {value!r}: give PIVOT or PIVOT=FORWARD_MODEL,BACKWARD_MODEL"
            )
        if not given and name not in configured:
            raise ConfigError(
                f"--pivot {name!r} is not configured (configured: {sorted(configured)}); give {name}=FORWARD,BACKWARD"
            )
        chosen[name] = pair if given else configured[name]
    return chosen


@app.command("backtranslate")
def backtranslate_command(
    input: InputArgument,
    output: OutputOption = Path("backtranslated.parquet"),
    column: ColumnOption = "sentence",
    rejects: RejectsOption = None,
    pivots: Annotated[
        list[str] | None,
        typer.Option(
            "--pivot",
            help="Pivot to use: a configured one (de, ru) or de=FORWARD,BACKWARD model names/paths (repeatable; default: all configured).",
        ),
    ] = None,
    config: ConfigOption = None,
    settings: SetOption = None,
) -> None:
    """Back-translate sentences through pivot languages and keep a candidate by MER (OssCSE Step 2)."""
    from cseaug.augment.backtranslate import BackTranslationStage, BackTranslator

    rejects = checked_outputs(output, rejects)
    cfg, _ = config_section(BacktranslationConfig, "backtranslation", config, settings)
    if pivots:
        cfg = cfg.model_copy(update={"pivots": chosen_pivots(pivots, cfg.pivots)})

    result, _ = run_step(
        lambda: BackTranslationStage(BackTranslator.from_config(cfg)),
        input,
        column,
        output,
        rejects,
        before=["id", "sentence", "positive", "positive_method", "mer_positive"],
        after=[],
    )
    stats = result.stats
    console = Console()
    console.print(_counts_table("kept pivot", stats["chosen_pivot"], stats["sentences"]))
    console.print(
        f"kept {stats['kept']} of {stats['sentences']} sentence(s) (share kept {stats['share_kept']:.1%}, "
        f"MER within [{cfg.mer_range[0]}, {cfg.mer_range[1]}], prefer {cfg.prefer}); mean MER per pivot "
        + ", ".join(f"{p} {v}" for p, v in stats["mean_mer"].items())
    )
    console.print(f"results: {output}\nrejects: {rejects}")


@app.command("mer")
def mer_command(
    input: Annotated[
        Path | None,
        typer.Argument(
            help="Table with a reference and a hypothesis column (.csv/.tsv/.jsonl/.parquet)."
        ),
    ] = None,
    reference_column: Annotated[
        str, typer.Option(help="Column of the source sentences.")
    ] = "sentence",
    hypothesis_column: Annotated[
        str, typer.Option(help="Column of the transformed sentences.")
    ] = "positive",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write reference, hypothesis, mer here (.parquet/.jsonl)."
        ),
    ] = None,
    pair: Annotated[
        tuple[str, str] | None,
        typer.Option(help="Print the MER of one REFERENCE HYPOTHESIS pair instead."),
    ] = None,
    mer_range: Annotated[
        tuple[float, float], typer.Option(help="Report the share of pairs within LOW HIGH.")
    ] = (0.15, 0.6),
) -> None:
    """Match Error Rate (OssCSE eq. 1) of sentence pairs, lower-cased with edge punctuation stripped."""
    import numpy as np
    import pyarrow as pa

    from cseaug.config import CorpusConfig
    from cseaug.dataset.tables import write_table
    from cseaug.metrics.mer import mer, mer_pairs
    from cseaug.readers.corpus import detect_format, open_corpus

    if output is not None:
        check_output(output)
    console = Console()
    if pair is not None:
        console.print(f"{mer(*pair):.4f}")
        return
    if input is None:
        raise InputError("give a table file (cseaug mer pairs.csv) or --pair REFERENCE HYPOTHESIS")
    if input.exists() and detect_format(input) == "text":
        raise InputError(
            f"{input} is a text file; cseaug mer needs a table with a reference and a hypothesis column"
        )
    corpus = CorpusConfig(
        path=str(input), text_column=reference_column, view_columns={"positive": hypothesis_column}
    )
    batches = list(open_corpus(corpus).batches())
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or table.num_rows == 0:
        raise InputError(f"{input} has no rows")
    try:
        references = table.column("text").cast(pa.string()).to_pylist()
    except pa.ArrowInvalid as exc:
        raise InputError(f"{input}: column {reference_column!r} is not UTF-8 text ({exc})") from exc
    hypotheses = table.column("positive").to_pylist()
    values = mer_pairs(references, hypotheses)
    if output is not None:
        write_table(
            pa.table({"reference": references, "hypothesis": hypotheses, "mer": values}), output
        )
    valid = values[~np.isnan(values)]
    low, high = mer_range
    columns = ("pairs", "missing", "mean", "p10", "median", "p90", f"in [{low}, {high}]")
    summary = Table(*(Column(name, justify="right") for name in columns), title=f"MER of {input}")
    if valid.size:
        p10, median, p90 = np.percentile(valid, [10, 50, 90])
        share = float(np.mean((valid >= low) & (valid <= high)))
        cells = [f"{valid.mean():.4f}", f"{p10:.4f}", f"{median:.4f}", f"{p90:.4f}", f"{share:.1%}"]
    else:
        cells = ["-"] * 5
    summary.add_row(str(len(values)), str(len(values) - valid.size), *cells)
    console.print(summary)
    if output is not None:
        console.print(f"results: {output}")
