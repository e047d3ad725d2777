"""Exports of a published version in the files four trainers read unchanged (SimCSE,
NGCSE, sentence-transformers, plain JSONL), streamed and written atomically. What each
trainer's loading code needs, which view goes where and what each layout leaves out and
why: docs/dataset-contract.md, "Exports".
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from cseaug.config import ExportConfig, normalize_export_format
from cseaug.dataset import versions
from cseaug.dataset.atomic import atomic_path
from cseaug.dataset.export_records import record_export
from cseaug.dataset.reader import augmentation_view, augmentation_views, iter_batches
from cseaug.dataset.schema import SPLIT_AIGEN, SPLIT_OTHER, VIEW_COLUMNS
from cseaug.errors import InputError
from cseaug.progress import progress_bar

LAYOUTS: tuple[str, ...] = ("auto", "pair", "triplet", "quadruplet", "hybrid")
SUFFIXES = {
    "simcse": ".csv",
    "ngcse": ".jsonl",
    "sentence-transformers": ".parquet",
    "jsonl": ".jsonl",
}

NGCSE_KEYS = ("sentence", "5", "4", "3", "2", "1", "0")
"""Keys NGCSE's PrepareFeatures reads from every row, in its order."""
NGCSE_SLOTS = {"5": "positive", "0": "negative"}
"""NGCSE key -> view without an intermediate view (NLI pattern, SKI): ``_ng_forward`` takes
key index 1 as the positive and -1 as the hard negative."""
NGCSE_HIERARCHY_SLOTS = {"5": "sentence", "4": "positive", "3": "intermediate", "0": "negative"}
"""NGCSE key -> view with an intermediate view (STS pattern): ``_ng_forward`` takes key index
2 as the positive with more than 3 keys, so the anchor itself fills index 1 and the
hierarchical loss ranks s^p > s^m > s^n (docs/dataset-contract.md, "NGCSE JSONL")."""

NGCSE_MARGINS_NOTE = (
    "NGCSE's train.py on this 5-key layout: pass --use_loss3 --margins '[[5e-3, 5e-3, 5e-2], []]' "
    "(and --aigen_batch_size 16, as their sts_ht.sh): its hierarchical loss ranks the anchor's "
    "dropout view > s^p > s^m > s^n with margins[0][i] for step i (the last repeated), so eq. 6's "
    "m1, m2 are the 2nd and 3rd margins; their scripts' [[5e-3, 5e-2], []] would put 5e-2 "
    "between s^p and s^m. `cseaug train-encoder --version NAME/VERSION --config "
    "configs/train/ngcse.yaml` trains eq. 6 as printed"
)
SIMCSE_QUADRUPLET_NOTE = (
    "SimCSE's train.py reads 2 or 3 columns and raises NotImplementedError on this 4-column CSV "
    "(x, x+, x-, x_ski): train it with `cseaug train-encoder --version NAME/VERSION --config "
    "configs/train/skicse-sup.yaml`, or export --format jsonl for a trainer of your own"
)


def trainer_notes(views: dict[str, int]) -> list[str]:
    """The notes above that apply to a version's exports, from ``counts.views`` of its manifest."""
    notes = []
    if views.get("intermediate"):
        notes.append(f"ngcse export: {NGCSE_MARGINS_NOTE}")
    if views.get("knowledge") and views.get("negative"):
        notes.append(f"simcse --layout quadruplet: {SIMCSE_QUADRUPLET_NOTE}")
    return notes


LAYOUT_VIEWS = {
    "pair": ("positive",),
    "triplet": ("positive", "negative"),
    "quadruplet": ("positive", "negative", "knowledge"),
}
COLUMN_NAMES = {
    "simcse": {"sentence": "sent0", "positive": "sent1", "negative": "hard_neg", "knowledge": "knowledge"},
    "sentence-transformers": {v: v for v in VIEW_COLUMNS} | {"sentence": "anchor"},
}  # fmt: skip
HYBRID_FILES = {SPLIT_AIGEN: "aigen.parquet", SPLIT_OTHER: "other.parquet"}
JSONL_KEYS = ("id", "sentence", "split", "method", *VIEW_COLUMNS, "augmentations")

PANDAS_NA_STRINGS = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
        "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip
"""Cells pandas.read_csv turns into missing values by default (its documented ``na_values``)."""


def normalize_format(fmt: str) -> str:
    """:func:`cseaug.config.normalize_export_format`, an unknown format an InputError."""
    try:
        return normalize_export_format(fmt)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


@dataclass
class ExportResult:
    """What an export wrote (``parts``: rows per file of a hybrid), left out, and why."""

    path: Path
    format: str
    split: str
    layout: str
    columns: list[str]
    rows: int = 0
    epoch: int | None = None
    parts: dict[str, int] = field(default_factory=Counter)
    skipped: dict[str, int] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


def _text_schema(names: Sequence[str]) -> pa.Schema:
    return pa.schema([pa.field(name, pa.string(), nullable=False) for name in names])


def _split_filter(split: str) -> bool | None:
    """The ``heldout`` value of the rows a split keeps (None: every row)."""
    if split in ("train", "heldout"):
        return split == "heldout"
    if split == "all":
        return None
    raise InputError(f"unknown split '{split}'; choose train, heldout or all")


def _with_knowledge_as_positive(
    views: Mapping[str, pa.Array], counts: Counter | None = None
) -> dict[str, pa.Array]:
    """SKICSE's (x, x_ski) pair: knowledge fills the positive of a row that has none; the
    knowledge of a row with its own positive is not exported (counted in ``counts``)."""
    if counts is not None:
        counts["knowledge_views_not_exported"] += _count(
            pc.and_(pc.is_valid(views["positive"]), pc.is_valid(views["knowledge"]))
        )
    return {**views, "positive": pc.coalesce(views["positive"], views["knowledge"])}


def _complete_aigen(
    batch: pa.RecordBatch, views: Mapping[str, pa.Array], slots: Sequence[str], counts: Counter
) -> pa.Array:
    """The aigen rows that have every view of ``slots``; the others are counted as demoted."""
    aigen = pc.equal(batch.column("split"), SPLIT_AIGEN)
    complete = pc.and_(aigen, _all_valid(views, slots, batch.num_rows) if slots else False)
    counts["aigen_rows_demoted_to_other"] += _count(pc.and_(aigen, pc.invert(complete)))
    return complete


def _count(mask: pa.Array) -> int:
    return int(pc.sum(mask).as_py() or 0)


def _all_valid(views: Mapping[str, pa.Array], names: Sequence[str], length: int) -> pa.Array:
    valid = (pc.is_valid(views[name]) for name in names)
    return functools.reduce(pc.and_, valid, pa.repeat(pa.scalar(True), length))


@dataclass
class Selection:
    """The rows of ``split`` an export reads, with Generate-CSE's view ``epoch`` as the
    positive; :meth:`of` counts them and the aigen rows with each view or layout."""

    version_dir: Path
    split: str
    epoch: int | None
    rows: int = 0
    aigen_views: Counter = field(default_factory=Counter)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The selected rows, verified against the manifest while they are read (:mod:`.reader`)."""
        heldout = _split_filter(self.split)
        for batch in iter_batches(self.version_dir, [*JSONL_KEYS, "heldout"]):
            if heldout is not None:
                batch = batch.filter(pc.equal(batch.column("heldout"), heldout))
            if batch.num_rows:  # an empty row group is a file `datasets` cannot read
                yield batch.drop_columns(["heldout"])

    def exporting(self, fmt: str) -> Iterator[pa.RecordBatch]:
        """:meth:`batches` under the progress bar of an export to ``fmt``."""
        with progress_bar(f"Exporting {fmt}", total=self.rows, unit="rows") as bar:
            for batch in self.batches():
                yield batch
                bar.advance(batch.num_rows)

    def views(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        """The export views of a batch; with an epoch, the positive is that Generate-CSE view."""
        views = {view: batch.column(view) for view in VIEW_COLUMNS}
        if self.epoch is not None:
            views["positive"] = augmentation_view(batch.column("augmentations"), self.epoch)
        return views

    @classmethod
    def of(cls, version_dir: Path, split: str, epoch: int | None) -> Selection:
        """The selection, counted in one pass."""
        selection = cls(version_dir, split, epoch)
        for batch in selection.batches():
            selection.rows += batch.num_rows
            aigen = pc.equal(batch.column("split"), SPLIT_AIGEN)
            views = selection.views(batch)
            coalesced = _with_knowledge_as_positive(views)
            wanted = {view: (views, (view,)) for view in VIEW_COLUMNS} | {
                "positive_or_knowledge": (coalesced, ("positive",)),
                "triplet": (coalesced, LAYOUT_VIEWS["triplet"]),
                "quadruplet": (views, LAYOUT_VIEWS["quadruplet"]),
            }
            for name, (source, needed) in wanted.items():
                has = _all_valid(source, needed, batch.num_rows)
                selection.aigen_views[name] += _count(pc.and_(aigen, has))
        return selection


def _flat_columns(
    batch: pa.RecordBatch, views: dict[str, pa.Array], layout: str, counts: Counter
) -> list[pa.Array]:
    """The anchor and view columns of a single-file layout; counts what is left out."""
    sentence = batch.column("sentence")
    is_other = pc.equal(batch.column("split"), SPLIT_OTHER)
    exported = LAYOUT_VIEWS[layout]
    if layout != "quadruplet":
        views = _with_knowledge_as_positive(views, counts)
    for view in ("intermediate", "negative"):
        if view not in exported:
            counts[f"{view}_views_not_exported"] += _count(pc.is_valid(views[view]))
    if layout == "pair":
        counts["self_pairs"] += _count(pc.is_null(views["positive"]))
        return [sentence, pc.coalesce(views["positive"], sentence)]
    keep = _all_valid(views, exported, batch.num_rows)
    counts[f"other_rows_not_{layout}s"] += _count(pc.and_(pc.invert(keep), is_other))
    counts[f"aigen_rows_missing_{'_or_'.join(exported)}"] += _count(
        pc.and_(pc.invert(keep), pc.invert(is_other))
    )
    return [pc.filter(column, keep) for column in (sentence, *(views[v] for v in exported))]


def _drop_pandas_na(columns: list[pa.Array], counts: Counter) -> list[pa.Array]:
    """Leave out rows with a cell pandas would read as missing (SimCSE would train on ' ')."""
    value_set = pa.array(sorted(PANDAS_NA_STRINGS))
    bad = functools.reduce(pc.or_, (pc.is_in(column, value_set=value_set) for column in columns))
    if not (n_bad := _count(bad)):
        return columns
    counts["cells_pandas_reads_as_missing"] += n_bad
    return [pc.filter(column, pc.invert(bad)) for column in columns]


def _check_out(fmt: str, layout: str, out: Path) -> None:
    if fmt == "simcse":
        if out.suffix != ".csv":
            raise InputError(
                f"SimCSE picks its loader by the file extension: name the export *.csv, not {out.name}"
            )
        if "tsv" in str(out):
            raise InputError(
                f"SimCSE's train.py reads any path containing 'tsv' as tab-separated: choose a path without 'tsv' ({out})"
            )
    if fmt in ("ngcse", "jsonl") and out.suffix not in (".json", ".jsonl"):
        raise InputError(
            f"the {fmt} export is JSON lines (NGCSE's train.py accepts only .json/.jsonl): "
            f"name it *.jsonl, not {out.name}"
        )
    if layout == "hybrid" and (out.suffix or out.is_file()):
        raise InputError(
            f"the hybrid layout writes a directory of two Parquet files: give a directory, not {out}"
        )


def _check_layout(fmt: str, layout: str, epoch: int | None) -> None:
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout '{layout}'; choose {', '.join(LAYOUTS)}")
    if layout == "hybrid" and fmt != "sentence-transformers":
        raise InputError(
            f"only sentence-transformers has a hybrid layout ({fmt}: "
            + ("NGCSE's file is a hybrid by itself)" if fmt == "ngcse" else "one layout per file)")
        )
    if fmt == "jsonl" and epoch is not None:
        raise InputError("the jsonl export keeps every Generate-CSE view: leave out the epoch")


def _resolve_layout(layout: str, selection: Selection) -> str:
    if layout == "auto":
        return next(
            (name for name in ("quadruplet", "triplet") if selection.aigen_views[name]), "pair"
        )
    if layout in ("triplet", "quadruplet") and not selection.aigen_views[layout]:
        views = " and ".join(LAYOUT_VIEWS[layout])
        raise InputError(
            f"no row of split '{selection.split}' has {views}: use --layout pair (or hybrid for sentence-transformers)"
        )
    return layout


def export_version(
    version_dir: str | Path,
    fmt: str,
    out: str | Path,
    *,
    split: str = "train",
    layout: str = "auto",
    epoch: int | None = None,
) -> ExportResult:
    """Export ``split`` (``train``, ``heldout``, ``all``) of a version for one trainer into
    ``out`` (a directory for the hybrid layout), replaced atomically; with ``epoch``, that
    Generate-CSE view is the positive. InputError: an unknown format, split or layout, a
    file name the trainer would misread, or no row with what the export needs.
    """
    fmt = normalize_format(fmt)
    version_dir, out = Path(version_dir), Path(out)
    _check_layout(fmt, layout, epoch)
    _check_out(fmt, layout, out)
    selection = Selection.of(version_dir, split, epoch)
    if selection.rows == 0:
        raise InputError(f"{version_dir} has no rows in split '{split}' to export")
    if epoch is not None and not selection.aigen_views["positive"]:
        views = augmentation_views(version_dir)
        raise InputError(
            f"no row of {version_dir} has Generate-CSE view {epoch}; "
            + (f"its views are 0..{views - 1}" if views else "it has no augmentations")
        )
    if fmt == "ngcse":
        result = _export_ngcse(selection, out)
    elif fmt == "jsonl":
        result = _export_jsonl(selection, out)
    elif layout == "hybrid":
        result = _export_hybrid(selection, out)
    else:
        result = _export_flat(selection, fmt, out, _resolve_layout(layout, selection))
    result.epoch = epoch
    record_export(version_dir, out)  # exports beside the version are checked by cseaug verify
    result.skipped = {k: v for k, v in sorted(result.skipped.items()) if v}
    result.notes = [f"{n} row(s): {NOTES[k]}" for k, n in result.skipped.items()] + result.notes
    return result


def _export_flat(selection: Selection, fmt: str, out: Path, layout: str) -> ExportResult:
    names = [COLUMN_NAMES[fmt][v] for v in ("sentence", *LAYOUT_VIEWS[layout])]
    result = ExportResult(out, fmt, selection.split, layout, names)
    schema = _text_schema(names)
    writer_class = pacsv.CSVWriter if fmt == "simcse" else pq.ParquetWriter
    with atomic_path(out) as tmp, writer_class(tmp, schema) as writer:
        for batch in selection.exporting(fmt):
            columns = _flat_columns(batch, selection.views(batch), layout, result.skipped)
            if fmt == "simcse":
                columns = _drop_pandas_na(columns, result.skipped)
            table = pa.Table.from_arrays(columns, schema=schema)
            writer.write_table(table)
            result.rows += table.num_rows
    if fmt == "simcse" and layout == "quadruplet":
        result.notes.append(SIMCSE_QUADRUPLET_NOTE)
    return result


def _export_hybrid(selection: Selection, out: Path) -> ExportResult:
    slots = [view for view in VIEW_COLUMNS if selection.aigen_views[view]]
    if not slots:
        raise InputError(f"no aigen row of split '{selection.split}' has a view: use --layout pair")
    names = {SPLIT_AIGEN: ["anchor", *slots], SPLIT_OTHER: ["anchor", "positive"]}
    result = ExportResult(
        out, "sentence-transformers", selection.split, "hybrid", names[SPLIT_AIGEN]
    )
    schemas = {group: _text_schema(columns) for group, columns in names.items()}
    out.mkdir(parents=True, exist_ok=True)
    with (
        atomic_path(out / HYBRID_FILES[SPLIT_AIGEN]) as aigen_tmp,
        atomic_path(out / HYBRID_FILES[SPLIT_OTHER]) as other_tmp,
        pq.ParquetWriter(aigen_tmp, schemas[SPLIT_AIGEN]) as aigen_writer,
        pq.ParquetWriter(other_tmp, schemas[SPLIT_OTHER]) as other_writer,
    ):
        for batch in selection.exporting(result.format):
            views = selection.views(batch)
            complete = _complete_aigen(batch, views, slots, result.skipped)
            sentence = batch.column("sentence")
            kept = [pc.filter(c, complete) for c in (sentence, *(views[v] for v in slots))]
            aigen_writer.write_table(pa.Table.from_arrays(kept, schema=schemas[SPLIT_AIGEN]))
            plain = pc.filter(sentence, pc.invert(complete))
            other_writer.write_table(
                pa.Table.from_arrays([plain, plain], schema=schemas[SPLIT_OTHER])
            )
            result.parts[SPLIT_AIGEN] += len(kept[0])
            result.parts[SPLIT_OTHER] += len(plain)
    result.rows = sum(result.parts.values())
    result.notes = [
        f"{HYBRID_FILES[SPLIT_AIGEN]}: {result.parts[SPLIT_AIGEN]} rows "
        f"({', '.join(names[SPLIT_AIGEN])}); {HYBRID_FILES[SPLIT_OTHER]}: "
        f"{result.parts[SPLIT_OTHER]} rows (anchor, positive = the anchor: dropout positive). "
        "Load each with load_dataset('parquet', data_files=..., split='train') and train on the "
        "DatasetDict with one loss per file"
    ]
    return result


def _ngcse_slots(selection: Selection) -> dict[str, str]:
    """The NGCSE key set of the aigen rows, from the views they carry (see NGCSE_HIERARCHY_SLOTS)."""
    present = {"sentence"} | {view for view in VIEW_COLUMNS if selection.aigen_views[view]}
    if selection.aigen_views["positive_or_knowledge"]:
        present.add("positive")
    slots = NGCSE_HIERARCHY_SLOTS if "intermediate" in present else NGCSE_SLOTS
    return {key: view for key, view in slots.items() if view in present}


def _write_json_lines(
    out: Path,
    fmt: str,
    selection: Selection,
    objects: Callable[[pa.RecordBatch], list[dict[str, Any]]],
) -> None:
    """Write the JSON objects of every selected batch, one a line, atomically."""
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for batch in selection.exporting(fmt):
            for row in objects(batch):
                handle.write(json.dumps(row, ensure_ascii=False))
                handle.write("\n")


def _export_ngcse(selection: Selection, out: Path) -> ExportResult:
    slots = _ngcse_slots(selection)
    generated = [view for view in slots.values() if view != "sentence"]
    result = ExportResult(out, "ngcse", selection.split, "hybrid", [*NGCSE_KEYS, "split"])
    counts = result.skipped
    empty = pa.scalar("", pa.string())

    def objects(batch: pa.RecordBatch) -> list[dict[str, Any]]:
        views = _with_knowledge_as_positive(selection.views(batch), counts)
        views["sentence"] = batch.column("sentence")
        complete = _complete_aigen(batch, views, generated, counts)
        columns = {"sentence": batch.column("sentence")}
        for key in NGCSE_KEYS[1:]:
            view = slots.get(key)
            columns[key] = (
                pc.if_else(complete, views[view], empty) if view else pa.repeat(empty, len(batch))
            )
        columns["split"] = pc.if_else(complete, SPLIT_AIGEN, SPLIT_OTHER)
        return pa.table(columns).to_pylist()

    _write_json_lines(out, "ngcse", selection, objects)
    result.rows = selection.rows
    keys = ["sentence", *(f"'{k}' ({v})" for k, v in slots.items())]
    result.notes = [f"aigen rows carry keys {', '.join(keys)}; other rows carry 'sentence' only"]
    if "intermediate" in slots.values():
        result.notes.append(NGCSE_MARGINS_NOTE)
    return result


def _export_jsonl(selection: Selection, out: Path) -> ExportResult:
    def objects(batch: pa.RecordBatch) -> list[dict[str, Any]]:
        rows = batch.select(list(JSONL_KEYS)).to_pylist()
        for row in rows:
            row["augmentations"] = sorted(row["augmentations"] or [], key=lambda a: a["view"])
        return rows

    _write_json_lines(out, "jsonl", selection, objects)
    return ExportResult(out, "jsonl", selection.split, "rows", list(JSONL_KEYS), selection.rows)


NOTES = {
    "other_rows_not_triplets": "other rows have no views and cannot be triplets: export with --layout pair to keep "
    "them as (sentence, sentence) pairs, --layout hybrid (sentence-transformers) or --format ngcse for hybrid training",
    "other_rows_not_quadruplets": "other rows lack the views of a quadruplet: export with --layout hybrid "
    "(sentence-transformers) or --format jsonl to keep them",
    "aigen_rows_missing_positive_or_negative": "aigen rows lacking a positive or a negative were left out of the triplets",
    "aigen_rows_missing_positive_or_negative_or_knowledge": "aigen rows lacking a positive, a negative or "
    "knowledge were left out of the quadruplets",
    "negative_views_not_exported": "the pair layout has no negative column: negatives were not exported",
    "knowledge_views_not_exported": "rows with a positive and knowledge lost the knowledge: export SKICSE "
    "quadruplets with --layout quadruplet, --layout hybrid or --format jsonl",
    "self_pairs": "rows without a positive were exported as (sentence, sentence) pairs, as unsupervised SimCSE trains",
    "intermediate_views_not_exported": "only NGCSE's format, the hybrid and jsonl have a place for intermediate views",
    "cells_pandas_reads_as_missing": "rows with a cell pandas reads as missing (NA, null, nan, ...) were left out: "
    "SimCSE would have trained on ' ' instead",
    "aigen_rows_demoted_to_other": "aigen rows missing a view that other aigen rows have were exported as other rows "
    "(NGCSE uses one key set per split)",
}


def default_export_path(
    root: str | Path,
    name: str,
    version: str,
    fmt: str,
    split: str = "train",
    layout: str = "auto",
    epoch: int | None = None,
) -> Path:
    """``<root>/exports/<name>/<version>/<format>[-<layout>]-<split>[-epoch<k>]<ext>``.

    Example:
        >>> default_export_path("storage", "wiki", "v0001", "sentence_transformers", "train", "hybrid", 2)
        PosixPath('storage/exports/wiki/v0001/sentence-transformers-hybrid-train-epoch2')
    """
    fmt = normalize_format(fmt)
    export = fmt + ("" if layout == "auto" else f"-{layout}") + f"-{split}"
    if epoch is not None:
        export += f"-epoch{epoch}"
    export += "" if layout == "hybrid" else SUFFIXES[fmt]
    return Path(root, "exports", versions.check_name(name), version, export)


def write_configured_exports(
    version_dir: str | Path, exports: Sequence[ExportConfig], root: str | Path
) -> list[ExportResult]:
    """The exports ``output.exports`` asks for, beside the version: train (and heldout) files,
    one per Generate-CSE epoch view except for ``jsonl``, which carries every view."""
    version_dir = Path(version_dir)
    manifest = versions.read_manifest(version_dir)
    splits = ["train", "heldout"] if manifest["counts"]["heldout"] else ["train"]
    views = augmentation_views(version_dir)
    results = []
    for export in exports:
        fmt, layout = export.format, export.layout
        epochs = list(range(views)) if views and normalize_format(fmt) != "jsonl" else [None]
        for split in splits:
            for epoch in epochs:
                path = default_export_path(
                    root, manifest["dataset"], manifest["version"], fmt, split, layout, epoch
                )
                results.append(
                    export_version(version_dir, fmt, path, split=split, layout=layout, epoch=epoch)
                )
    return results
