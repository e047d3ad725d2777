"""``diagnostics/`` of a dataset version: how similar each view is to its anchor (NGCSE, Figure 7).

NGCSE judges a training set by the density histograms of Match Error Rate and cosine
similarity of its pairs (appendix, "Match Error Rate and Cosine Similarity").
:func:`write_diagnostics` streams a version's rows and writes ``mer.png``, ``cs.png`` and
``summary.json`` (statistics, pattern order, contamination); CS is read from the version's
``cs_<view>`` columns (the build's CS step, :mod:`cseaug.pipeline.cs`), or, for a version
without them, computed on the CS sample chosen from each row's id (docs/diagnostics.md,
"What a version's ``diagnostics/`` holds").
"""

from __future__ import annotations

import base64
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.config import DiagnosticsConfig
from cseaug.config.fingerprint import CS_KEYS
from cseaug.dataset.atomic import write_text_atomic
from cseaug.dataset.reader import data_files, iter_batches
from cseaug.diagnostics.contamination import ContaminationCounter, EvalIndex, load_eval_index
from cseaug.diagnostics.patterns import OrderCounts
from cseaug.diagnostics.views import (
    ORDER_VIEWS,
    AnchorWords,
    any_valid,
    cs_matrix,
    cs_sample_limit,
    in_cs_sample,
    present_views,
    rows_with_views,
    view_cs,
    view_mer,
)
from cseaug.encoders.base import Encoder
from cseaug.encoders.loading import encoder_from_config
from cseaug.encoders.worker import EncoderWorker
from cseaug.errors import InputError
from cseaug.markdown import markdown_table
from cseaug.metrics.histograms import METRIC_RANGES, MetricValues, Panel, Series, plot_panels
from cseaug.progress import progress_bar

SUMMARY_FILE = "summary.json"
PLOT_FILES = {"mer": "mer.png", "cs": "cs.png", "figure7": "figure7.png"}
REPORT_FILE = "report.html"
VIEW_COLORS = {
    "positive": "tab:green",
    "intermediate": "tab:orange",
    "negative": "tab:red",
    "knowledge": "tab:purple",
}
BATCH_ROWS = 8_192
SAMPLED_PER_SLICE = 64
"""Rows of the cosine-similarity sample embedded per call to the encoder (its anchors and
views: ~400 texts, a few seconds on 2 CPU cores): the progress bar moves after each, so
the wait for the encoder worker shows as it goes rather than one jump per batch."""


@dataclass
class DiagnosticsSummary:
    """What :func:`write_diagnostics` wrote into ``out_dir`` (``summary``: its ``summary.json``),
    and what the dataset card and Prefect artifact show."""

    out_dir: Path
    summary: dict[str, Any]

    @classmethod
    def load(cls, out_dir: str | Path) -> DiagnosticsSummary:
        """Read back what :func:`write_diagnostics` wrote into ``out_dir`` (e.g. a published version's)."""
        directory = Path(out_dir)
        path = directory / SUMMARY_FILE
        if not path.is_file():
            raise InputError(f"{directory} holds no {SUMMARY_FILE}: run `cseaug diagnose` first")
        return cls(directory, json.loads(path.read_text(encoding="utf-8")))

    @property
    def plots(self) -> dict[str, str]:
        """Metric -> PNG file name inside ``out_dir``."""
        return self.summary.get("plots", {})

    @property
    def summary_path(self) -> Path:
        return self.out_dir / SUMMARY_FILE

    def plot_paths(self) -> list[str]:
        """Plot paths relative to the version directory (``diagnostics/mer.png``, ...)."""
        return [f"diagnostics/{name}" for name in self.plots.values()]

    def artifact_markdown(self) -> str:
        """Markdown for a Prefect artifact: images inlined as base64 PNG data URIs (the UI renders them)."""
        s = self.summary
        lines = ["## Diagnostics", ""]
        cs = s["cs"]
        cs_note = (
            f"on a seeded sample of {cs['rows']:,} rows"
            if cs["sampled"]
            else f"on all {cs['rows']:,} rows with views"
        )
        lines += [
            "Similarity of each view to its anchor, as NGCSE's Figure 7: Match Error Rate over "
            "words (lower: more words shared) on every row, cosine similarity with "
            f"`{cs['encoder']}` {cs_note}. Bins and axes are the same in "
            "every panel.",
            "",
        ]
        for metric, name in self.plots.items():
            data = base64.b64encode((self.out_dir / name).read_bytes()).decode("ascii")
            lines += [f"![{metric.upper()} by view](data:image/png;base64,{data})", ""]
        header = ["view", "pairs", "MER mean", "MER q1 / median / q3"]
        first = next(iter(s["views"].values()), None)
        bands = {metric: first[metric]["bands"] if first else [] for metric in ("mer", "cs")}
        header += [f"MER in [{b['low']:g}, {b['high']:g}]" for b in bands["mer"]]
        header += ["CS pairs", "CS mean", "CS q1 / median / q3"]
        header += [f"CS in [{b['low']:g}, {b['high']:g}]" for b in bands["cs"]]
        rows = []
        for view, stats in s["views"].items():
            row = [view]
            for metric in ("mer", "cs"):
                m = stats[metric]
                row += [
                    f"{m['n']:,}",
                    format_value(m["mean"]),
                    " / ".join(format_value(m[k]) for k in ("q1", "median", "q3")),
                ]
                row += [_pct(b["share"]) for b in m["bands"]]
            rows.append(row)
        lines += [markdown_table(header, rows), ""]
        lines += [f"- {line}" for line in self.check_lines()]
        report = self.out_dir.resolve() / REPORT_FILE
        if report.is_file():
            lines.append(
                f"- The version's report, one offline HTML file (rows aligned with their "
                f"scores, rejects): [{report}]({report.as_uri()})"
            )
        return "\n".join(lines).rstrip() + "\n"

    def check_lines(self) -> list[str]:
        """The pattern-order and contamination results in words, one sentence each (the card
        lists them; ``cseaug diagnose`` prints them)."""
        s = self.summary
        lines = []
        checks = [
            f"{metric.upper()} {o['ordered_rows']:,} of {o['eligible_rows']:,} rows ({_pct(o['share'])})"
            for metric, o in s["pattern_order"].items()
            if o["eligible_rows"]
        ]
        if checks:
            lines.append(
                "Pattern order (positive more similar than intermediate, intermediate more than "
                f"negative, over the views each row has): {'; '.join(checks)}."
            )
        contamination = s.get("contamination")
        if contamination and "rows" in contamination:
            hits = ", ".join(f"{k}: {v:,}" for k, v in contamination["by_eval_set"].items() if v)
            lines.append(
                f"Contamination: {contamination['contaminated_rows']:,} rows "
                f"({_pct(contamination['share'])}) share a sentence with an evaluation set"
                + (f" ({hits})." if hits else ".")
            )
        elif contamination:
            lines.append(f"Contamination check skipped: {contamination['skipped']}.")
        return lines


def format_value(value: float | None) -> str:
    """A statistic of ``summary.json`` to three decimals; ``–`` where it has none."""
    return "–" if value is None else f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def count_rows(rows_source: str | Path) -> int:
    """Rows of a version from its Parquet footers (no data read)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in data_files(rows_source))


def measured_alike(cfg: DiagnosticsConfig, manifest: dict[str, Any] | None) -> bool:
    """Whether ``cfg`` decides the ``cs_<view>`` values as the version's build did (its
    manifest's ``diagnostics``): same encoder settings, sample and seed."""
    built = ((manifest or {}).get("config") or {}).get("diagnostics")
    keys = CS_KEYS | {"cs_sample", "seed"}
    try:
        measured = DiagnosticsConfig.model_validate(built).model_dump(mode="json", include=keys)
    except ValueError:  # no manifest, or one of another release's settings
        return False
    return cfg.model_dump(mode="json", include=keys) == measured


def row_slices(sampled: np.ndarray, per_slice: int) -> list[tuple[int, int]]:
    """Consecutive row ranges ``[start, end)`` over ``sampled`` (one flag per row), each
    holding at most ``per_slice`` sampled rows; rows outside the sample do not split a range.

    Example:
        >>> row_slices(np.array([True, False, True, True, False, True]), 2)
        [(0, 3), (3, 6)]
    """
    cuts = np.flatnonzero(sampled)[per_slice::per_slice].tolist()
    edges = [0, *cuts, sampled.size]
    return list(itertools.pairwise(edges))


def write_diagnostics(
    rows_source: str | Path,
    out_dir: str | Path,
    cfg: DiagnosticsConfig | None = None,
    *,
    encoder: Encoder | None = None,
    eval_index: EvalIndex | None = None,
    cache_dir: str | Path | None = None,
    title: str | None = None,
    stored_cs: bool = True,
) -> DiagnosticsSummary:
    """Write MER / CS histograms, statistics, pattern-order and contamination checks of a version.

    Args:
        rows_source: a version or staging directory (``data/*.parquet`` inside), read in
            batches with :func:`cseaug.dataset.reader.iter_batches`.
        out_dir: where to write (``<staging>/diagnostics`` before publishing; any directory
            for a published, read-only version).
        cfg: the ``diagnostics`` config section (defaults if None).
        encoder: a loaded encoder to reuse; default: :func:`encoder_from_config`, loaded
            only when some row has a view.
        eval_index: a loaded evaluation index; default: loaded from ``cfg.eval_data_dir``
            when set, else the contamination check is skipped (and says so).
        cache_dir: on-disk embedding cache (``<output.root>/cache/embeddings``).
        title: title of the plots (e.g. ``wiki-sts/v0003``).
        stored_cs: read the version's ``cs_<view>`` columns when its build measured them
            (False: ``cfg`` asks for another encoder or sample, :func:`measured_alike`).
    """
    cfg = cfg or DiagnosticsConfig()
    source = Path(rows_source)
    out = Path(out_dir)
    schema = pq.read_schema(data_files(source)[0])
    views = present_views(schema)
    total = count_rows(source)
    ids, measured_by_build = rows_with_views(source, views)
    stored = [f"cs_{v}" for v in views if measured_by_build and stored_cs]
    limit = None if stored else cs_sample_limit(ids, cfg.cs_sample, cfg.seed)
    if (ids and not stored) or cfg.reference:  # the encoder's load shows apart
        with progress_bar("Loading the sentence encoder", total=1, unit="models") as bar:
            if encoder is None:
                encoder = encoder_from_config(cfg, cache_dir)
            elif isinstance(encoder, EncoderWorker):
                encoder.wait_until_loaded()
            bar.advance()
    index = eval_index
    if index is None and cfg.eval_data_dir:
        index = load_eval_index(cfg.eval_data_dir)

    bins = {"mer": cfg.mer_bins, "cs": cfg.cs_bins}
    values = {view: {m: MetricValues(m, n) for m, n in bins.items()} for view in views}
    order = {"mer": OrderCounts("mer"), "cs": OrderCounts("cs")}
    counter = ContaminationCounter(index, cfg.contamination_fields) if index is not None else None
    mer_columns = [f"mer_{v}" for v in views if f"mer_{v}" in schema.names]
    measured = 0
    with progress_bar("Diagnostics", total=total, unit="rows") as bar:
        for batch in iter_batches(
            source, columns=["id", "sentence", *views, *mer_columns, *stored], batch_size=BATCH_ROWS
        ):
            whole = pa.Table.from_batches([batch])
            if stored:  # the build's CS step measured the sample: its rows have a value
                in_sample = np.isfinite(cs_matrix(whole, views)).any(axis=1)
            else:
                in_sample = in_cs_sample(whole["id"].to_pylist(), limit, cfg.seed)
                in_sample &= any_valid(whole, views)
            measured += int(in_sample.sum())
            for start, end in row_slices(in_sample, SAMPLED_PER_SLICE):
                n = end - start
                table, sampled = whole.slice(start, n), in_sample[start:end]
                matrices = {m: np.full((n, 3), np.nan) for m in ("mer", "cs")}
                anchors = AnchorWords(table)
                for view in views:
                    mer = view_mer(table, view, anchors)
                    values[view]["mer"].add(mer[~np.isnan(mer)])
                    if stored or encoder is None or not sampled.any():
                        cs = cs_matrix(table, [view])[:, 0]
                    else:
                        cs = view_cs(table, view, encoder, rows=sampled)
                    values[view]["cs"].add(cs[~np.isnan(cs)])
                    if view in ORDER_VIEWS:
                        matrices["mer"][:, ORDER_VIEWS.index(view)] = mer
                        matrices["cs"][:, ORDER_VIEWS.index(view)] = cs
                for metric, counts in order.items():
                    counts.add(matrices[metric])
                if counter is not None:
                    counter.add(table)
                bar.advance(n)

    out.mkdir(parents=True, exist_ok=True)
    plots: dict[str, str] = {}
    for metric in ("mer", "cs"):
        panels = [
            Panel(
                view,
                metric,
                [Series(view, values[view][metric].histogram, VIEW_COLORS[view])],
                bands=cfg.bands.get(metric, ()),
            )
            for view in views
            if values[view][metric].histogram.n
        ]
        if panels:
            heading = (
                f"{'MER' if metric == 'mer' else 'cosine similarity'} of each view to its anchor"
            )
            heading = f"{title}: {heading}" if title else heading
            plot_panels([panels], out / PLOT_FILES[metric], title=heading)
            plots[metric] = PLOT_FILES[metric]
    if cfg.reference and encoder is not None:  # the version beside the data it imitates
        from cseaug.diagnostics import compare as fig7

        readers = {"stsb": fig7.stsb_pairs, "nli": fig7.nli_pairs}
        pairs = [fig7.version_pairs(source, title or "version", seed=cfg.seed)]
        pairs += [readers[k](path, k.upper(), seed=cfg.seed) for k, path in cfg.reference.items()]
        fig7.compare(pairs, out, encoder, mer_bins=cfg.mer_bins, cs_bins=cfg.cs_bins)
        plots["figure7"] = PLOT_FILES["figure7"]

    summary: dict[str, Any] = {
        "rows": total,
        "rows_with_views": len(ids),
        "views": {
            view: {m: values[view][m].summary(cfg.bands.get(m, [])) for m in ("mer", "cs")}
            for view in views
            if values[view]["mer"].histogram.n
        },
        "cs": {
            "encoder": cfg.encoder if encoder is None else getattr(encoder, "name", cfg.encoder),
            "pooling": cfg.pooling,
            "rows": measured,
            "sampled": measured < len(ids),
            "cs_sample": cfg.cs_sample,
            "seed": cfg.seed,
            # a build's encoder worker: how many texts were embedded while the LLM generated
            **({"embedding": encoder.overlap()} if isinstance(encoder, EncoderWorker) else {}),
        },
        "bins": {m: {"range": list(METRIC_RANGES[m]), "bins": n} for m, n in bins.items()},
        "pattern_order": {m: counts.to_dict() for m, counts in order.items()},
        "contamination": counter.to_dict()
        if counter is not None
        else {"skipped": "diagnostics.eval_data_dir is not set"},
        "plots": plots,
    }
    write_text_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2, sort_keys=False) + "\n")
    return DiagnosticsSummary(out, summary)
