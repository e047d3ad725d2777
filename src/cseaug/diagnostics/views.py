"""MER and cosine similarity of each view of canonical rows against its anchor, and the CS
sample.

Published versions carry ``mer_<view>`` columns (the build's MER step) and ``cs_<view>``
columns on the CS sample (the build's CS step, :mod:`cseaug.pipeline.cs`); they are reused
where present and computed where missing, so other tables and older files give the same
numbers. The CS sample is chosen from each row's id (:func:`in_cs_sample`), so it does not
depend on the rows' order or on how they were cut into shards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.dataset.reader import data_files, iter_batches
from cseaug.dataset.schema import VIEW_COLUMNS
from cseaug.encoders.base import Encoder
from cseaug.metrics.cosine import cosine_pairs
from cseaug.metrics.mer import mer_words, normalize_words
from cseaug.patterns import STS_LEVELS

ORDER_VIEWS = STS_LEVELS
"""Views in falling similarity to the anchor: NGCSE's STS levels (NLI has no intermediate)."""


def present_views(table: pa.Table | pa.Schema) -> list[str]:
    """The view columns a table (or schema) has, in the contract's order."""
    names = table.names if isinstance(table, pa.Schema) else table.column_names
    return [v for v in VIEW_COLUMNS if v in names]


class AnchorWords:
    """The anchors of a table as MER words, normalised on first use and once for all views."""

    def __init__(self, table: pa.Table) -> None:
        self._sentences = table.column("sentence")
        self._words: list[list[str]] | None = None

    def __getitem__(self, index: int) -> list[str]:
        if self._words is None:
            self._words = [normalize_words(s) for s in self._sentences.to_pylist()]
        return self._words[index]


def view_mer(table: pa.Table, view: str, anchors: AnchorWords) -> np.ndarray:
    """MER(anchor, view) per row as float64; NaN where the view is null. Values equal
    :func:`cseaug.metrics.mer.mer_pairs`; ``anchors`` are the table's, shared by its views so
    that each anchor is normalised once."""
    texts = table.column(view)
    valid = pc.is_valid(texts).to_numpy(zero_copy_only=False)
    out = np.full(table.num_rows, np.nan, dtype=np.float64)
    stored_name = f"mer_{view}"
    if stored_name in table.column_names:
        stored = table.column(stored_name).to_numpy(zero_copy_only=False).astype(np.float64)
        out[valid] = stored[valid]
    todo = np.flatnonzero(valid & np.isnan(out))
    if todo.size:
        views = texts.take(pa.array(todo)).to_pylist()
        out[todo] = [
            mer_words(anchors[int(i)], normalize_words(v)) for i, v in zip(todo, views, strict=True)
        ]
    return out


def view_cs(
    table: pa.Table, view: str, encoder: Encoder, rows: np.ndarray | None = None
) -> np.ndarray:
    """CS(anchor, view) per row as float32; NaN where the view is null or the row not in ``rows``
    (a boolean mask of the rows to embed, a sample; None: every row)."""
    texts = table.column(view)
    wanted = pc.is_valid(texts).to_numpy(zero_copy_only=False)
    if rows is not None:
        wanted &= rows
    out = np.full(table.num_rows, np.nan, dtype=np.float32)
    todo = np.flatnonzero(wanted)
    if todo.size:
        index = pa.array(todo)
        out[todo] = cosine_pairs(
            table.column("sentence").take(index).to_pylist(), texts.take(index).to_pylist(), encoder
        )
    return out


def any_valid(table: pa.Table | pa.RecordBatch, columns: Sequence[str]) -> np.ndarray:
    """Which rows have a value in any of ``columns`` (none without columns)."""
    masks = [pc.is_valid(table[c]).to_numpy(zero_copy_only=False) for c in columns]
    return np.logical_or.reduce([*masks, np.zeros(table.num_rows, dtype=bool)])


def valid_positions(source: str | Path, columns: list[str]) -> np.ndarray:
    """Positions of the rows of a version where any of ``columns`` is not null (reads those
    columns only, streaming)."""
    found, offset = [], 0
    for batch in iter_batches(source, columns=columns, batch_size=65_536):
        found.append(offset + np.flatnonzero(any_valid(batch, columns)))
        offset += batch.num_rows
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)


def rows_with_views(source: str | Path, views: list[str]) -> tuple[list[str], bool]:
    """The ids of the rows of a version that have any of ``views``, and whether any row has a
    ``cs_<view>`` value (its build measured CS: the columns hold the CS sample); streaming."""
    ids: list[str] = []
    measured = False
    names = pq.read_schema(data_files(source)[0]).names
    cs = [f"cs_{v}" for v in views if f"cs_{v}" in names]
    for batch in iter_batches(source, columns=["id", *views, *cs], batch_size=65_536):
        ids += pc.filter(batch.column("id"), pa.array(any_valid(batch, views))).to_pylist()
        measured = measured or any(batch.column(c).null_count < batch.num_rows for c in cs)
    return ids, measured


def seeded_sample(positions: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """At most ``size`` of ``positions`` drawn without replacement with ``seed``, sorted; all of
    them when ``size`` is None or not smaller.

    Example:
        >>> seeded_sample(np.arange(10), 3, seed=0).tolist()
        [5, 6, 9]
    """
    if size is None or positions.size <= size:
        return positions
    return np.sort(np.random.default_rng(seed).choice(positions, size=size, replace=False))


def cs_keys(ids: Sequence[str], seed: int) -> np.ndarray:
    """Each row's place in the CS sample: 8 bytes of BLAKE2b over the seed and its id, as an
    unsigned integer (smallest first in the sample)."""
    return np.array(
        [
            int.from_bytes(hashlib.blake2b(f"{seed}\0{i}".encode(), digest_size=8).digest(), "big")
            for i in ids
        ],
        dtype=np.uint64,
    )


def cs_sample_limit(ids: Sequence[str], size: int | None, seed: int) -> int | None:
    """The largest :func:`cs_keys` value in a CS sample of ``size`` of ``ids``: the ``size``
    rows of smallest key; None (every row) when ``size`` is None or not smaller.

    Example:
        >>> ids = ["a", "b", "c", "d"]
        >>> limit = cs_sample_limit(ids, 2, seed=0)
        >>> int(in_cs_sample(ids, limit, seed=0).sum()), cs_sample_limit(ids, 4, seed=0)
        (2, None)
    """
    if size is None or len(ids) <= size:
        return None
    return int(np.partition(cs_keys(ids, seed), size - 1)[size - 1])


def in_cs_sample(ids: Sequence[str], limit: int | None, seed: int) -> np.ndarray:
    """Which of ``ids`` are in the CS sample whose :func:`cs_sample_limit` is ``limit``."""
    if limit is None:
        return np.ones(len(ids), dtype=bool)
    return cs_keys(ids, seed) <= np.uint64(limit)


def cs_matrix(table: pa.Table, views: Sequence[str] = ORDER_VIEWS) -> np.ndarray:
    """(n, len(views)) ``cs_<view>`` columns as float64 (default: positive, intermediate,
    negative); NaN where null or absent."""
    out = np.full((table.num_rows, len(views)), np.nan)
    for column, view in enumerate(views):
        if f"cs_{view}" in table.column_names:
            out[:, column] = table.column(f"cs_{view}").to_numpy(zero_copy_only=False)
    return out
