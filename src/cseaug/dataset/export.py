"""Exports of a published version in the files three trainers read unchanged.

Each export streams the version (Arrow batches, flat memory), writes through a hidden
temporary file and renames it into place. What each trainer's own loading code does, and
so what the files must look like:

* **SimCSE** (princeton-nlp/SimCSE ``train.py``, ``main``): ``load_dataset("csv", ...)``
  with ``delimiter="\\t"`` if ``"tsv"`` is anywhere in the path, else ``","``; the layout
  is read from the number of columns only: 3 = (sent0, sent1, hard negative), 2 = pairs,
  1 = unsupervised (the column is used twice); a null cell becomes ``" "``. So one file
  has one layout, the path must end in ``.csv`` and must not contain ``tsv``, and a cell
  that pandas reads as missing (``NA``, ``null``, ``nan``, ... with ``keep_default_na``)
  would silently become ``" "``: such rows are left out and counted.
* **NGCSE** (BDBC-KG-NLP/NGCSE ``train.py`` and ``ngcse/utils.py`` ``PrepareFeatures``):
  ``load_dataset("json", ...)`` of a ``.json``/``.jsonl`` file. ``PrepareFeatures`` reads
  the keys ``sentence``, ``'5'``, ``'4'``, ``'3'``, ``'2'``, ``'1'``, ``'0'`` of every row
  (all must exist), takes for each ``split`` (``aigen``/``other``) the keys that are not
  ``''`` in the FIRST row of that split and uses that key set for every row of the split;
  an ``other`` row with only ``sentence`` is used twice (dropout positive). So absent views
  are ``''`` (never null), and every ``aigen`` row must carry the same views: an ``aigen``
  row missing one is exported as an ``other`` row and counted as demoted.
* **sentence-transformers** (``SentenceTransformerTrainer``, ``BaseDataCollator``): a
  ``datasets.Dataset`` whose columns, in order, are the loss inputs (anchor, positive,
  negative for ``MultipleNegativesRankingLoss``); every column that is not a label is
  tokenized as text, so the file holds only ``anchor``, ``positive`` [, ``negative``]
  and no nulls. Written as Parquet (``load_dataset("parquet", ...)``).

Views: ``positive`` (or, when a row has none, ``knowledge``: SKICSE's (x, x_ski) pair)
-> sent1 / ``'5'`` / positive; ``intermediate`` -> ``'3'`` (NGCSE only); ``negative`` ->
hard_neg / ``'0'`` / negative. Layouts of SimCSE and sentence-transformers: ``triplet``
keeps rows with a positive and a negative (``other`` rows cannot be triplets and are left
out, counted); ``pair`` keeps every row, a row without a positive paired with itself
(unsupervised SimCSE's positive), negatives dropped (counted); ``auto`` picks ``triplet``
when any selected ``aigen`` row has both, else ``pair``. For hybrid training use NGCSE.

Example:
    >>> result = export_version("storage/datasets/wiki-sts/v0001", "ngcse", "wiki_sts.jsonl")  # doctest: +SKIP
    >>> result.rows, result.skipped  # doctest: +SKIP
    (1000000, {})
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pds
import pyarrow.parquet as pq

from cseaug.dataset import versions
from cseaug.dataset.reader import data_files
from cseaug.dataset.schema import SPLIT_AIGEN, SPLIT_OTHER
from cseaug.dataset.shards import atomic_path
from cseaug.errors import InputError
from cseaug.progress import progress_bar

ExportFormat = Literal["simcse", "ngcse", "sentence-transformers"]
Layout = Literal["auto", "triplet", "pair"]
SplitChoice = Literal["train", "heldout", "all"]

FORMATS: tuple[str, ...] = ("simcse", "ngcse", "sentence-transformers")
SUFFIXES = {"simcse": ".csv", "ngcse": ".jsonl", "sentence-transformers": ".parquet"}

NGCSE_KEYS = ("sentence", "5", "4", "3", "2", "1", "0")
"""Keys NGCSE's PrepareFeatures reads from every row, in its order."""
NGCSE_SLOTS = {"5": "positive", "3": "intermediate", "0": "negative"}
"""NGCSE key -> the (export) view that fills it; '4', '2', '1' stay ''."""

PANDAS_NA_STRINGS = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
        "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip
"""Cells pandas.read_csv turns into missing values by default (its documented ``na_values``)."""

COLUMNS = {
    "simcse": ("sent0", "sent1", "hard_neg"),
    "sentence-transformers": ("anchor", "positive", "negative"),
}
SCAN_COLUMNS = ["sentence", "split", "positive", "knowledge", "intermediate", "negative"]


def normalize_format(fmt: str) -> str:
    """``sentence_transformers`` (config spelling) and ``sentence-transformers`` are one format."""
    value = fmt.replace("_", "-").lower()
    if value not in FORMATS:
        raise InputError(f"unknown export format '{fmt}'; formats: {', '.join(FORMATS)}")
    return value


@dataclass
class ExportResult:
    """What an export wrote and what it left out, and why."""

    path: Path
    format: str
    split: str
    layout: str
    columns: list[str]
    rows: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _split_filter(split: str) -> pds.Expression | None:
    if split == "train":
        return ~pds.field("heldout")
    if split == "heldout":
        return pds.field("heldout")
    if split == "all":
        return None
    raise InputError(f"unknown split '{split}'; choose train, heldout or all")


def _batches(version_dir: Path, split: str) -> Iterator[pa.RecordBatch]:
    dataset = pds.dataset([str(p) for p in data_files(version_dir)], format="parquet")
    yield from dataset.to_batches(
        columns=SCAN_COLUMNS, filter=_split_filter(split), batch_size=65_536
    )


def _positive(batch: pa.RecordBatch) -> pa.Array:
    """The positive view, falling back to the SKI text (SKICSE pairs an anchor with its SKI)."""
    return pc.coalesce(batch.column("positive"), batch.column("knowledge"))


@dataclass
class ViewCensus:
    """Selected rows, and how many aigen rows carry each export view (the first pass)."""

    rows: int = 0
    aigen: int = 0
    aigen_views: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, version_dir: Path, split: str) -> ViewCensus:
        census = cls()
        for batch in _batches(version_dir, split):
            census.rows += batch.num_rows
            aigen = pc.equal(batch.column("split"), SPLIT_AIGEN)
            census.aigen += int(pc.sum(aigen).as_py() or 0)
            views = {
                "positive": _positive(batch),
                "intermediate": batch.column("intermediate"),
                "negative": batch.column("negative"),
            }
            for view, values in views.items():
                census.aigen_views[view] += int(
                    pc.sum(pc.and_(aigen, pc.is_valid(values))).as_py() or 0
                )
            census.aigen_views["triplet"] += int(
                pc.sum(
                    pc.and_(
                        aigen,
                        pc.and_(pc.is_valid(views["positive"]), pc.is_valid(views["negative"])),
                    )
                ).as_py()
                or 0
            )
        return census


def _count(mask: pa.Array) -> int:
    return int(pc.sum(mask).as_py() or 0)


def _pair_rows(batch: pa.RecordBatch, layout: str, counts: Counter) -> list[pa.Array]:
    """The (anchor, positive[, negative]) columns of a batch under a layout; counts what is left out."""
    positive = _positive(batch)
    negative = batch.column("negative")
    is_other = pc.equal(batch.column("split"), SPLIT_OTHER)
    intermediate = _count(pc.is_valid(batch.column("intermediate")))
    if intermediate:
        counts["intermediate_views_not_exported"] += intermediate
    if layout == "triplet":
        keep = pc.and_(pc.is_valid(positive), pc.is_valid(negative))
        counts["other_rows_not_triplets"] += _count(pc.and_(pc.invert(keep), is_other))
        counts["aigen_rows_missing_positive_or_negative"] += _count(
            pc.and_(pc.invert(keep), pc.invert(is_other))
        )
        return [
            pc.filter(batch.column("sentence"), keep),
            pc.filter(positive, keep),
            pc.filter(negative, keep),
        ]
    counts["negative_views_not_exported"] += _count(pc.is_valid(negative))
    counts["self_pairs"] += _count(pc.is_null(positive))
    return [batch.column("sentence"), pc.coalesce(positive, batch.column("sentence"))]


def _drop_pandas_na(columns: list[pa.Array], counts: Counter) -> list[pa.Array]:
    """Leave out rows with a cell pandas would read as missing (SimCSE would train on ' ')."""
    value_set = pa.array(sorted(PANDAS_NA_STRINGS))
    bad = pc.is_in(columns[0], value_set=value_set)
    for column in columns[1:]:
        bad = pc.or_(bad, pc.is_in(column, value_set=value_set))
    n_bad = _count(bad)
    if not n_bad:
        return columns
    counts["cells_pandas_reads_as_missing"] += n_bad
    keep = pc.invert(bad)
    return [pc.filter(column, keep) for column in columns]


def _check_out(fmt: str, out: Path) -> None:
    if fmt == "simcse":
        if out.suffix != ".csv":
            raise InputError(
                f"SimCSE picks its loader by the file extension: name the export *.csv, not {out.name}"
            )
        if "tsv" in str(out):
            raise InputError(
                f"SimCSE's train.py reads any path containing 'tsv' as tab-separated: choose a path without 'tsv' ({out})"
            )
    if fmt == "ngcse" and out.suffix not in (".json", ".jsonl"):
        raise InputError(
            f"NGCSE's train.py accepts only .json/.jsonl train files: name the export *.jsonl, not {out.name}"
        )


def export_version(
    version_dir: str | Path,
    fmt: str,
    out: str | Path,
    *,
    split: str = "train",
    layout: str = "auto",
) -> ExportResult:
    """Export a version for one trainer (see the module docstring for each file's layout).

    Args:
        version_dir: the published version.
        fmt: ``simcse``, ``ngcse`` or ``sentence-transformers``.
        out: the file to write (replaced atomically if it exists).
        split: ``train`` (rows not held out), ``heldout`` or ``all``.
        layout: for SimCSE and sentence-transformers: ``auto``, ``triplet`` or ``pair``.

    Raises:
        InputError: unknown format/split/layout, a file name the trainer would misread, or
            no row to export.
    """
    fmt = normalize_format(fmt)
    version_dir, out = Path(version_dir), Path(out)
    _check_out(fmt, out)
    _split_filter(split)
    if layout not in ("auto", "triplet", "pair"):
        raise InputError(f"unknown layout '{layout}'; choose auto, triplet or pair")
    census = ViewCensus.of(version_dir, split)
    if census.rows == 0:
        raise InputError(f"{version_dir} has no rows in split '{split}' to export")
    if fmt == "ngcse":
        return _export_ngcse(version_dir, out, split, census)
    if layout == "auto":
        layout = "triplet" if census.aigen_views["triplet"] else "pair"
    if layout == "triplet" and not census.aigen_views["triplet"]:
        raise InputError(
            f"no row of split '{split}' has both a positive and a negative: use --layout pair"
        )
    width = 3 if layout == "triplet" else 2
    names = list(COLUMNS[fmt][:width])
    result = ExportResult(out, fmt, split, layout, names)
    counts: Counter = Counter()
    schema = pa.schema([pa.field(n, pa.string(), nullable=False) for n in names])
    with (
        atomic_path(out) as tmp,
        progress_bar(f"Exporting {fmt}", total=census.rows, unit="rows") as bar,
    ):
        writer = pacsv.CSVWriter(tmp, schema) if fmt == "simcse" else pq.ParquetWriter(tmp, schema)
        try:
            for batch in _batches(version_dir, split):
                columns = _pair_rows(batch, layout, counts)
                if fmt == "simcse":
                    columns = _drop_pandas_na(columns, counts)
                table = pa.Table.from_arrays(columns, schema=schema)
                writer.write_table(table)
                result.rows += table.num_rows
                bar.advance(batch.num_rows)
        finally:
            writer.close()
    result.skipped = {k: v for k, v in sorted(counts.items()) if v}
    result.notes = _notes(result)
    return result


def _export_ngcse(version_dir: Path, out: Path, split: str, census: ViewCensus) -> ExportResult:
    slots = {key: view for key, view in NGCSE_SLOTS.items() if census.aigen_views[view]}
    result = ExportResult(out, "ngcse", split, "hybrid", [*NGCSE_KEYS, "split"])
    counts: Counter = Counter()
    with (
        atomic_path(out) as tmp,
        open(tmp, "w", encoding="utf-8") as handle,
        progress_bar("Exporting ngcse", total=census.rows, unit="rows") as bar,
    ):
        for batch in _batches(version_dir, split):
            views = {
                "positive": _positive(batch),
                "intermediate": batch.column("intermediate"),
                "negative": batch.column("negative"),
            }
            aigen = pc.equal(batch.column("split"), SPLIT_AIGEN)
            complete = aigen if slots else pc.and_(aigen, pa.scalar(False))
            for view in slots.values():
                complete = pc.and_(complete, pc.is_valid(views[view]))
            counts["aigen_rows_demoted_to_other"] += _count(pc.and_(aigen, pc.invert(complete)))
            empty = pa.scalar("", pa.string())
            columns = {"sentence": batch.column("sentence")}
            for key in NGCSE_KEYS[1:]:
                view = slots.get(key)
                columns[key] = (
                    pc.if_else(complete, views[view], empty)
                    if view
                    else pa.repeat(empty, batch.num_rows)
                )
            columns["split"] = pc.if_else(complete, SPLIT_AIGEN, SPLIT_OTHER)
            for row in pa.table(columns).to_pylist():
                handle.write(json.dumps(row, ensure_ascii=False))
                handle.write("\n")
            result.rows += batch.num_rows
            bar.advance(batch.num_rows)
        handle.flush()
    result.skipped = {k: v for k, v in sorted(counts.items()) if v}
    result.notes = _notes(result)
    result.notes.insert(
        0, f"aigen rows carry keys {['sentence', *slots]}; other rows carry 'sentence' only"
    )
    return result


NOTES = {
    "other_rows_not_triplets": "other rows have no views and cannot be triplets: export with --layout pair to keep "
    "them as (sentence, sentence) pairs, or use --format ngcse for hybrid training",
    "aigen_rows_missing_positive_or_negative": "aigen rows lacking a positive or a negative were left out of the triplets",
    "negative_views_not_exported": "the pair layout has no negative column: negatives were not exported",
    "self_pairs": "rows without a positive were exported as (sentence, sentence) pairs, as unsupervised SimCSE trains",
    "intermediate_views_not_exported": "only NGCSE's format has a place for intermediate views ('3')",
    "cells_pandas_reads_as_missing": "rows with a cell pandas reads as missing (NA, null, nan, ...) were left out: "
    "SimCSE would have trained on ' ' instead",
    "aigen_rows_demoted_to_other": "aigen rows missing a view that other aigen rows have were exported as other rows "
    "(NGCSE uses one key set per split)",
}


def _notes(result: ExportResult) -> list[str]:
    return [f"{n} row(s): {NOTES[k]}" for k, n in result.skipped.items()]


def default_export_path(
    root: str | Path, name: str, version: str, fmt: str, split: str = "train"
) -> Path:
    """``<root>/exports/<name>/<version>/<format>-<split>.<ext>`` (exports never live inside a version)."""
    fmt = normalize_format(fmt)
    return (
        Path(root)
        / "exports"
        / versions.check_name(name)
        / version
        / f"{fmt}-{split}{SUFFIXES[fmt]}"
    )


def write_configured_exports(
    version_dir: str | Path, formats: Sequence[str], root: str | Path
) -> list[ExportResult]:
    """The exports ``output.exports`` asks for, beside the version: a train file and (when the
    version holds held-out rows) a heldout file per format."""
    version_dir = Path(version_dir)
    manifest = versions.read_manifest(version_dir)
    splits = ["train", "heldout"] if manifest["counts"]["heldout"] else ["train"]
    return [
        export_version(
            version_dir,
            fmt,
            default_export_path(root, manifest["dataset"], manifest["version"], fmt, split),
            split=split,
        )
        for fmt in formats
        for split in splits
    ]
