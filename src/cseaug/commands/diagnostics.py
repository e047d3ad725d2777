"""``cseaug diagnose``, ``cseaug report``, ``cseaug compare``, ``cseaug probe-splits``
(docs/diagnostics.md, with examples). Published versions are immutable, so ``diagnose`` and
``report`` write beside them, by default to ``<root>/diagnostics/<name>/<version>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from cseaug.commands.options import RootOption, SetOption, config_section
from cseaug.config import DiagnosticsConfig
from cseaug.dataset import versions
from cseaug.dataset.protect import refuse_dataset_path
from cseaug.errors import InputError
from cseaug.roots import default_work_dir, is_uri

app = typer.Typer()


def _labelled(value: str) -> tuple[str | None, str]:
    """``LABEL=PATH`` -> (LABEL, PATH); a plain path (or one whose '=' lies in a directory) -> (None, PATH)."""
    label, sep, rest = value.partition("=")
    if sep and label and "/" not in label and rest:
        return label, rest
    return None, value


def _version_dir(root: str, ref: str) -> Path:
    """A version by reference, or any directory with ``data/*.parquet`` (e.g. a copy without manifest)."""
    as_path = Path(ref)
    if as_path.is_dir() and (as_path / "data").is_dir():
        return as_path
    return versions.resolve(root, ref)


def _checked_version(root: str, ref: str) -> tuple[Path, dict[str, Any] | None]:
    """:func:`_version_dir`, its files checked against the sha256 its manifest records (a
    changed file fails here, before any work), and its manifest (None without one)."""
    from cseaug.dataset.verify import recorded_sha256, verify_version

    version_dir = _version_dir(root, ref)
    if recorded_sha256(version_dir) is not None:
        verify_version(version_dir).raise_if_wrong()
    has_manifest = (version_dir / "manifest.json").is_file()
    return version_dir, versions.read_manifest(version_dir) if has_manifest else None


@app.command("diagnose")
def diagnose_command(
    ref: Annotated[str, typer.Argument(help="NAME, NAME/vNNNN, or a version directory.")],
    root: RootOption = "storage",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output directory (default: <root>/diagnostics/<name>/<version>; on an object "
            "store written in the work directory and uploaded there)."
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="Take the diagnostics section of this run config (YAML).")
    ] = None,
    settings: SetOption = None,
) -> None:
    """Write MER / CS histograms, statistics, pattern-order and contamination checks of a version.

    Settings come from --config, else the version's manifest, else the defaults; --set
    overrides them (e.g. cs_sample=500, eval_data_dir=data, embedding_cache=false).
    """
    from cseaug.dataset.commit_remote import upload_tree
    from cseaug.diagnostics.version import format_value, measured_alike, write_diagnostics

    version_dir, manifest = _checked_version(root, ref)
    cfg, source = config_section(DiagnosticsConfig, "diagnostics", config, settings, manifest)
    name, version = version_dir.parent.name, version_dir.name
    work = default_work_dir(root)
    upload = out is None and is_uri(root)
    target = Path(out or work / "diagnostics" / name / version)
    refuse_dataset_path(target, root, "--out")
    console = Console(stderr=True)
    console.print(f"diagnostics of {version_dir} with settings from {source} -> {target}")
    summary = write_diagnostics(
        version_dir,
        target,
        cfg,
        cache_dir=work / "cache" / "embeddings",
        title=f"{name}/{version}",
        stored_cs=measured_alike(cfg, manifest),
    )
    where = f"{root}/diagnostics/{name}/{version}" if upload else str(target)
    if upload:
        upload_tree(root, target, f"diagnostics/{name}/{version}")
    table = Table(
        "view", "MER pairs", "MER median", "CS pairs", "CS median", title=f"{name}/{version}"
    )
    for view, stats in summary.summary["views"].items():
        cells = [[f"{s['n']:,}", format_value(s["median"])] for s in (stats["mer"], stats["cs"])]
        table.add_row(view, *cells[0], *cells[1])
    console = Console()
    console.print(table)
    for line in summary.check_lines():  # pattern order, contamination
        console.print(line, highlight=False)
    console.print(f"wrote {', '.join(summary.plots.values())} and summary.json to {where}")


@app.command("report")
def report_command(
    ref: Annotated[str, typer.Argument(help="NAME, NAME/vNNNN, or a version directory.")],
    root: RootOption = "storage",
    out: Annotated[
        Path | None,
        typer.Option(
            help="The HTML file to write (default: <root>/diagnostics/<name>/<version>/"
            "report.html; on an object store in the work directory)."
        ),
    ] = None,
    open_it: Annotated[
        bool, typer.Option("--open", help="Open the report in the default web browser.")
    ] = False,
) -> None:
    """Write a version's report: one offline HTML file with its card, histograms, pattern
    order, rows aligned with their scores, and rejects (older versions included)."""
    import webbrowser

    from cseaug.diagnostics.report import write_report
    from cseaug.diagnostics.version import REPORT_FILE
    from cseaug.encoders.loading import encoder_from_config

    version_dir, manifest = _checked_version(root, ref)
    work = default_work_dir(root)
    target = out or work / "diagnostics" / version_dir.parent.name / version_dir.name / REPORT_FILE
    refuse_dataset_path(target, root, "--out")
    cfg, _ = config_section(DiagnosticsConfig, "diagnostics", None, [], manifest)
    encoder = encoder_from_config(cfg, work / "cache" / "embeddings")
    try:
        written = write_report(version_dir, target, manifest or {}, cfg, encoder=encoder)
    finally:
        encoder.close()
    typer.echo(f"wrote {written}")
    if open_it:
        webbrowser.open(written.resolve().as_uri())


@app.command("compare")
def compare_command(
    out: Annotated[Path, typer.Option(help="Directory for figure7.png and compare.json.")],
    version: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME, NAME/vNNNN or a version directory, optionally as LABEL=... (repeatable)."
        ),
    ] = None,
    stsb: Annotated[
        Path | None, typer.Option(help="An STS-B file (sts-dev.csv, ...) as reference.")
    ] = None,
    nli: Annotated[
        Path | None, typer.Option(help="NLI triples csv (sent0,sent1,hard_neg) as reference.")
    ] = None,
    corpus: Annotated[
        list[str] | None,
        typer.Option(
            help="FILE or LABEL=FILE, one sentence per line: its dropout, token-shuffle and token-cutoff views (repeatable)."
        ),
    ] = None,
    root: RootOption = "storage",
    max_pairs: Annotated[
        int, typer.Option(help="Pairs per polarity and setting (seeded sample).")
    ] = 1000,
    per_row: Annotated[int, typer.Option(help="Settings per row of the figure.")] = 2,
    positive_above: Annotated[float, typer.Option(help="STS-B positives: score above this.")] = 4.0,
    negative_below: Annotated[float, typer.Option(help="STS-B negatives: score below this.")] = 1.0,
    cutoff_ratio: Annotated[
        float, typer.Option(help="Share of words token_cutoff removes.")
    ] = 0.05,
    seed: Annotated[int, typer.Option(help="Seed of samples and transformations.")] = 0,
    encoder: Annotated[
        str | None, typer.Option(help="Sentence encoder for CS (default: all-MiniLM-L6-v2).")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Keep embeddings in memory only (no sqlite cache).")
    ] = False,
) -> None:
    """Draw NGCSE's Figure 7 grid: MER and CS densities of positive and negative pairs per setting."""
    refuse_dataset_path(out, root, "--out")
    from cseaug.diagnostics import compare as fig7
    from cseaug.encoders.loading import encoder_from_config

    settings: list[fig7.PairSet] = []
    for item in version or []:
        label, ref = _labelled(item)
        settings.append(fig7.version_pairs(_version_dir(root, ref), label, max_pairs, seed))
    if stsb is not None:
        settings.append(
            fig7.stsb_pairs(stsb, "STSB", positive_above, negative_below, max_pairs, seed)
        )
    if nli is not None:
        settings.append(fig7.nli_pairs(nli, "NLI", max_pairs, seed))
    for item in corpus or []:
        label, path = _labelled(item)
        settings += fig7.unsupervised_pairs(
            path,
            label or Path(path).stem,
            cutoff_ratio=cutoff_ratio,
            max_pairs=max_pairs,
            seed=seed,
        )
    if not settings:
        raise InputError("nothing to compare: give --version, --stsb, --nli or --corpus")
    cfg = DiagnosticsConfig(
        **({"encoder": encoder} if encoder else {}), embedding_cache=not no_cache
    )
    model = encoder_from_config(cfg, cache_dir=default_work_dir(root) / "cache" / "embeddings")
    figure, summary = fig7.compare(
        settings, out, model, mer_bins=cfg.mer_bins, cs_bins=cfg.cs_bins, per_row=per_row
    )
    Console().print(f"wrote {figure} and {summary} ({len(settings)} settings)")


@app.command("probe-splits")
def probe_splits_command(
    data_dir: Annotated[
        Path, typer.Option(help="SentEval's STS directory (STS1x-en-test, STSBenchmark).")
    ],
    out: Annotated[
        Path, typer.Option(help="Directory for probe_splits.parquet, table.json, table.md.")
    ],
    min_median: Annotated[
        float, typer.Option(help="Keep sets whose median score is at least this.")
    ] = 2.0,
    max_median: Annotated[
        float, typer.Option(help="Keep sets whose median score is at most this.")
    ] = 3.5,
    words: Annotated[
        Literal["whitespace", "project"],
        typer.Option(help="MER words: whitespace (the paper's) or project (punctuation dropped)."),
    ] = "whitespace",
) -> None:
    """Split the STS sets into OssCSE's Cont. / Oppn. probes and print a table like its Table 2."""
    refuse_dataset_path(out, None, "--out")
    from cseaug.diagnostics.probe_splits import probe_splits, table_markdown, write_probe_splits

    result = probe_splits(data_dir, min_median=min_median, max_median=max_median, words=words)
    paths = write_probe_splits(result, out)
    Console().print(table_markdown(result), markup=False, highlight=False)
    Console().print(f"wrote {', '.join(str(p) for p in paths.values())}")
