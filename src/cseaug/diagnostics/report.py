"""``diagnostics/report.html``: one self-contained page to read a version in a browser.

The page (the template ``report.html`` beside this module: inline CSS and plain JavaScript,
the plots as data URIs, nothing fetched) holds the card's facts, the histograms and pattern
order of ``diagnostics/``, an aligned grid of a seeded sample of rows plus the worst ones,
each view with its MER and CS to the anchor, and the rejects by stage and reason with
examples (docs/diagnostics.md, "The report").
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.config import DiagnosticsConfig
from cseaug.dataset.atomic import write_text_atomic
from cseaug.dataset.manifest import describe_model, describe_quality_gate
from cseaug.dataset.reader import data_files, iter_batches
from cseaug.diagnostics.patterns import OrderCounts, order_holds, order_matrix
from cseaug.diagnostics.version import BATCH_ROWS, PLOT_FILES, REPORT_FILE, SUMMARY_FILE
from cseaug.diagnostics.views import (
    ORDER_VIEWS,
    AnchorWords,
    any_valid,
    cs_matrix,
    present_views,
    seeded_sample,
    view_cs,
    view_mer,
)
from cseaug.encoders.base import Encoder

SAMPLE_ROWS = 2_000
"""Rows of the seeded sample in the grid, drawn from the diagnostics' CS sample (whose
embeddings the cache holds), whatever the version's size: the page stays a few MB."""
WORST_ROWS = 100
"""Rows added per kind of worst row: the largest MER order breaks, the highest positive MER."""
REJECT_EXAMPLES = 3
TEXT_LIMIT = 1_000
"""Characters kept of a reject's raw answer or detail."""
CARD_KEYS = ("dataset", "name", "version", "method", "description", "created_at", "config")
"""What the card shows of the manifest as it is."""


def view_similarity(table: pa.Table, view: str, encoder: Encoder | None) -> np.ndarray:
    """CS(anchor, view) per row: the table's ``cs_<view>`` column where it has a value (the CS
    sample), else computed with ``encoder`` (NaN without one)."""
    out = cs_matrix(table, [view])[:, 0]
    missing = np.isnan(out) & pc.is_valid(table[view]).to_numpy(zero_copy_only=False)
    if encoder is not None and missing.any():
        out[missing] = view_cs(table, view, encoder, rows=missing)[missing]
    return out


def pick_rows(mer: np.ndarray, has_view: np.ndarray, cfg: DiagnosticsConfig) -> np.ndarray:
    """Positions of the grid's rows: a seeded sample of the diagnostics' CS sample, the rows
    breaking the MER order most (``mer``: (n, 3) as :func:`order_matrix`), and those whose
    positive shares fewest words with the anchor."""
    sample = seeded_sample(np.flatnonzero(has_view), cfg.cs_sample, cfg.seed)
    picked = [seeded_sample(sample, SAMPLE_ROWS, cfg.seed)]
    eligible, ordered = order_holds(mer, "mer")
    broken = np.flatnonzero(eligible & ~ordered)
    if broken.size:
        gaps = mer[broken][:, [0, 1, 0]] - mer[broken][:, [1, 2, 2]]
        worst = np.nanmax(np.where(np.isnan(gaps), -np.inf, gaps), axis=1)
        picked.append(broken[np.argsort(-worst, kind="stable")][:WORST_ROWS])
    positive = np.flatnonzero(np.isfinite(mer[:, 0]))
    picked.append(positive[np.argsort(-mer[positive, 0], kind="stable")][:WORST_ROWS])
    return np.unique(np.concatenate(picked))


def _round(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 4)


def grid_rows(table: pa.Table, views: list[str], encoder: Encoder | None) -> list[dict[str, Any]]:
    """The grid's records: the anchor, each view as ``[text, CS, MER]``, the orders it breaks."""
    anchors = AnchorWords(table)
    mer = {view: view_mer(table, view, anchors) for view in views}
    cs = {view: view_similarity(table, view, encoder) for view in views}
    missing = np.full(table.num_rows, np.nan)
    broken = {}
    for metric, values in (("mer", mer), ("cs", cs)):
        matrix = np.stack([values.get(view, missing) for view in ORDER_VIEWS], axis=1)
        eligible, ordered = order_holds(matrix, metric)
        broken[metric.upper()] = eligible & ~ordered
    return [
        {
            "id": row["id"],
            "anchor": row["sentence"],
            "views": {v: [row[v], _round(cs[v][i]), _round(mer[v][i])] for v in views if row[v]},
            "broken": [metric for metric, rows in broken.items() if rows[i]],
        }
        for i, row in enumerate(table.select(["id", "sentence", *views]).to_pylist())
    ]


def reject_groups(path: Path) -> list[dict[str, Any]]:
    """``rejects.parquet`` by stage and reason, most rows first, with a few examples each."""
    if not path.is_file():
        return []
    table = pq.read_table(path)
    counts = table.group_by(["stage", "reason"]).aggregate([([], "count_all")]).to_pylist()
    groups = []
    for group in sorted(counts, key=lambda g: (-g["count_all"], g["stage"], g["reason"])):
        match = pc.and_(
            pc.equal(table["stage"], group["stage"]), pc.equal(table["reason"], group["reason"])
        )
        examples = table.filter(match).slice(0, REJECT_EXAMPLES)
        groups.append(
            {
                "stage": group["stage"],
                "reason": group["reason"],
                "rows": group["count_all"],
                "examples": [
                    {k: v[:TEXT_LIMIT] if isinstance(v, str) else v for k, v in example.items()}
                    for example in examples.select(
                        ["sentence", "view", "raw", "detail"]
                    ).to_pylist()
                ],
            }
        )
    return groups


def report_data(
    version_dir: Path,
    manifest: Mapping[str, Any],
    cfg: DiagnosticsConfig,
    encoder: Encoder | None,
) -> dict[str, Any]:
    """What the page shows, as JSON: card, plots, pattern order, grid rows, rejects."""
    diagnostics_dir = version_dir / "diagnostics"
    schema = pq.read_schema(data_files(version_dir)[0])
    views = present_views(schema)
    stored = [name for name in schema.names if name.startswith(("mer_", "cs_"))]
    measured = [name for name in stored if name.startswith("cs_")]
    # one pass over every row: counts, the MER order matrix, which rows have a view
    splits: Counter[str] = Counter()
    view_counts: Counter[str] = Counter()
    heldout, matrices, has_view, has_cs = 0, [], [], []
    for batch in iter_batches(
        version_dir, ["sentence", "split", "heldout", *views, *stored], BATCH_ROWS
    ):
        table = pa.Table.from_batches([batch])
        splits.update(table["split"].to_pylist())
        heldout += pc.sum(table["heldout"]).as_py() or 0
        valid = {v: pc.is_valid(table[v]).to_numpy(zero_copy_only=False) for v in views}
        view_counts.update({v: int(mask.sum()) for v, mask in valid.items()})
        has_view.append(any_valid(table, views))
        has_cs.append(any_valid(table, measured))
        matrices.append(order_matrix(table, "mer"))
    mer = np.concatenate(matrices) if matrices else np.empty((0, 3))
    # the grid's sample is drawn from the CS sample (rows with a cs_<view> value) when the
    # build measured one, else from the rows with views
    sample_from = np.concatenate(has_cs) if has_cs else np.empty(0, bool)
    if not sample_from.any():
        sample_from = np.concatenate(has_view) if has_view else np.empty(0, bool)
    positions = pick_rows(mer, sample_from, cfg)
    picked, offset = [], 0
    for batch in iter_batches(version_dir, ["id", "sentence", *views, *stored], BATCH_ROWS):
        lo, hi = np.searchsorted(positions, [offset, offset + batch.num_rows])
        picked.append(pa.Table.from_batches([batch]).take(pa.array(positions[lo:hi] - offset)))
        offset += batch.num_rows
    mer_order = OrderCounts("mer")
    mer_order.add(mer)
    summary_path = diagnostics_dir / SUMMARY_FILE
    summary = json.loads(summary_path.read_text("utf-8")) if summary_path.is_file() else {}
    rejects = reject_groups(version_dir / "rejects.parquet")
    return {
        "card": {key: manifest.get(key) for key in CARD_KEYS}
        | {
            "model": describe_model(manifest.get("model")),
            "quality_gate": describe_quality_gate(manifest.get("quality_gate")),
            "gate": manifest.get("quality_gate"),
            "fingerprints": manifest.get("fingerprints", {}),
        },
        "counts": {
            "rows": int(mer.shape[0]),
            "by_split": dict(splits),
            "heldout": int(heldout),
            "views": {view: n for view, n in view_counts.items() if n},
            "rejects": sum(group["rows"] for group in rejects),
        },
        "plots": {
            metric: "data:image/png;base64,"
            + base64.b64encode((diagnostics_dir / name).read_bytes()).decode("ascii")
            for metric, name in PLOT_FILES.items()
            if (diagnostics_dir / name).is_file()
        },
        "pattern_order": summary.get("pattern_order") or {"mer": mer_order.to_dict()},
        "cs": summary.get("cs"),
        "views": [view for view in views if view_counts[view]],
        "sample": {"rows": SAMPLE_ROWS, "worst": WORST_ROWS, "seed": cfg.seed},
        "rows": grid_rows(pa.concat_tables(picked), views, encoder) if picked else [],
        "rejects": rejects,
    }


def write_report(
    version_dir: str | Path,
    out_file: str | Path,
    manifest: Mapping[str, Any],
    cfg: DiagnosticsConfig | None = None,
    *,
    encoder: Encoder | None = None,
) -> Path:
    """Write the report of a version (or a staging directory) to ``out_file``.

    Args:
        version_dir: holds ``data/*.parquet`` and ``rejects.parquet``.
        out_file: the HTML file to write.
        manifest: the version's manifest (while publishing: the one about to be committed).
        cfg: the diagnostics settings (CS sample and seed); defaults if None.
        encoder: computes the grid rows' CS where the version has no ``cs_<view>`` column
            (None: no CS in the grid).

    The plots and ``summary.json`` shown are those of ``<version_dir>/diagnostics``.
    """
    data = report_data(Path(version_dir), manifest, cfg or DiagnosticsConfig(), encoder)
    template = files("cseaug.diagnostics").joinpath(REPORT_FILE).read_text("utf-8")
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, template.replace("/*DATA*/null", payload, 1))
    return out
