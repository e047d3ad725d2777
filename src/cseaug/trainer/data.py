"""The training sets of an objective as Arrow tables, read from a published version's
``data/*.parquet`` alone (:mod:`cseaug.dataset.reader`): each row goes to the first set of the
objective whose views it has (:mod:`cseaug.trainer.objectives`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cseaug.dataset.reader import augmentation_view, augmentation_views, iter_batches
from cseaug.errors import InputError
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.objectives import (
    EPOCH_VIEW,
    MIXED,
    MIXED_COLUMNS,
    MIXED_KINDS,
    TrainingSet,
    training_sets,
)

READ_COLUMNS = ["sentence", "heldout", "positive", "intermediate", "negative", "knowledge"]


@dataclass
class TrainingData:
    """The non-empty training sets of a run and what was left out; ``rows`` counts the rows of
    each set (Generate-CSE: per epoch; NGCSE's mixed set: of each set it mixes)."""

    tables: dict[str, pa.Table]
    sets: dict[str, TrainingSet]
    rows: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    epoch_blocks: int = 0
    generated: int = 0

    def datasets(self) -> dict[str, Any]:
        """The sets as ``datasets.Dataset``, without a copy."""
        from datasets import Dataset
        from datasets.table import InMemoryTable

        return {name: Dataset(InMemoryTable(table)) for name, table in self.tables.items()}


def load_training_data(version_dir: str | Path, cfg: TrainConfig) -> TrainingData:
    """Read a published version's rows into the training sets of ``cfg.objective``;
    Generate-CSE's set holds one block per epoch, view ``k mod V`` in block ``k``. InputError
    when no row fits any set, or for Generate-CSE without ``augmentations``."""
    sets = training_sets(cfg)
    per_epoch = any(EPOCH_VIEW in s.requires for s in sets)
    views = augmentation_views(version_dir) if per_epoch else 0
    if per_epoch and not views:
        raise InputError(
            f"{version_dir} has no Generate-CSE views (augmentations): objective "
            f"'{cfg.objective}' needs a version built with method generate_cse"
        )
    blocks = cfg.epochs if per_epoch else 1
    columns = READ_COLUMNS + (["augmentations"] if per_epoch else [])
    parts: dict[str, list[list[pa.Array]]] = {s.name: [[] for _ in range(blocks)] for s in sets}
    skipped: Counter = Counter()
    for batch in iter_batches(version_dir, columns):
        if not cfg.include_heldout:
            held = batch.column("heldout")
            skipped["heldout"] += held.true_count
            batch = batch.filter(pc.invert(held))
        epoch_views = (
            [augmentation_view(batch.column("augmentations"), k % views) for k in range(blocks)]
            if per_epoch
            else []
        )
        sources = {name: batch.column(name) for name in READ_COLUMNS}
        free = pa.repeat(pa.scalar(True), batch.num_rows)
        for training_set in sets:
            needed = [sources[v] for v in training_set.requires if v != EPOCH_VIEW]
            if EPOCH_VIEW in training_set.requires:
                needed += epoch_views
            taken = reduce(pc.and_, map(pc.is_valid, needed), free)
            free = pc.and_(free, pc.invert(taken))
            names = [name for name, _ in training_set.columns]
            for block in range(blocks):
                arrays = [
                    epoch_views[block] if source == EPOCH_VIEW else sources[source]
                    for _, source in training_set.columns
                ]
                parts[training_set.name][block].append(
                    pa.StructArray.from_arrays([pc.filter(a, taken) for a in arrays], names=names)
                )
        skipped["missing_epoch_views" if per_epoch else "no_training_set"] += free.true_count
    tables = {}
    for training_set in sets:
        chunks = [chunk for block in parts[training_set.name] for chunk in block]
        names = [name for name, _ in training_set.columns]
        struct = pa.struct([pa.field(name, pa.string()) for name in names])
        table = pa.Table.from_struct_array(pa.chunked_array(chunks, struct))
        if table.num_rows:
            tables[training_set.name] = table
    if not tables:
        raise InputError(
            f"no row of {version_dir} fits objective '{cfg.objective}': it trains on rows with "
            + " or ".join(
                "(" + ", ".join(s.requires) + ")" if s.requires else "(any row)" for s in sets
            )
            + "; `cseaug show` lists the views of the version"
        )
    data = TrainingData(
        tables=tables,
        sets={s.name: s for s in sets if s.name in tables},
        rows={name: table.num_rows // blocks for name, table in tables.items()},
        skipped={k: v for k, v in sorted(skipped.items()) if v},
        epoch_blocks=blocks if per_epoch else 0,
    )
    if cfg.objective == "ngcse" and cfg.ngcse.batching == "mixed":
        return mix_ngcse_sets(data)
    return data


def mix_ngcse_sets(data: TrainingData) -> TrainingData:
    """NGCSE's training sets as the one set of the authors' mixed batches: ``anchor``, the
    columns of ``MIXED_COLUMNS`` ("" where a row's set has no such view: the model card reads
    every column as text) and ``label`` (``MIXED_KINDS``), generated rows first."""
    parts, generated = [], 0
    for kind in reversed(MIXED_KINDS):  # hierarchy, pattern, pairs, then dropout
        table = data.tables.get(kind)
        if table is None:
            continue
        views = {name: _view_of(table, kind, name) for name in MIXED_COLUMNS}
        label = pa.array([MIXED_KINDS.index(kind)] * table.num_rows, pa.int64())
        parts.append(pa.table({"anchor": table.column("anchor"), **views, "label": label}))
        generated += table.num_rows if kind != "dropout" else 0
    return TrainingData(
        tables={MIXED.name: pa.concat_tables(parts)},
        sets={MIXED.name: MIXED},
        rows=data.rows,
        skipped=data.skipped,
        generated=generated,
    )


def _view_of(table: pa.Table, kind: str, column: str) -> pa.ChunkedArray | pa.Array:
    """Column ``column`` of the mixed set for the rows of set ``kind``."""
    if kind not in MIXED_COLUMNS[column]:
        return pa.repeat(pa.scalar("", pa.string()), table.num_rows)
    if column == "dropout_view":
        return table.column("anchor")
    return table.column("low" if column == "negative" and kind == "hierarchy" else column)
