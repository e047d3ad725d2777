"""Exact duplicates: rows grouped by their 64-bit key with one stable sort, each compared with
its group's first as strings, so a key collision never drops a sentence (docs/corpus.md).

Example:
    >>> import numpy as np, pyarrow as pa
    >>> dup, first = find_duplicates([pa.array(["a", "b", "a"])], np.array([7, 9, 7], np.uint64))
    >>> dup.tolist(), first.tolist()
    ([2], [0])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.corpus.rows import ChunkedRows


def find_duplicates(
    sentences: Sequence[pa.Array], keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ascending positions of every sentence (per-batch arrays, positions running across
    them) that occurred earlier, and of that earliest occurrence; equal sentences have equal
    ``keys``."""
    rows = ChunkedRows(
        [pa.RecordBatch.from_arrays([s], names=["s"]) for s in sentences],
        schema=pa.schema([("s", pa.string())]),
    )
    if len(keys) != len(rows):
        raise ValueError(f"{len(keys)} keys for {len(rows)} sentences")
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    repeated = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1]) + 1
    # The stable sort puts the earliest row of each key group first.
    leaders = order[np.searchsorted(sorted_keys, sorted_keys[repeated], side="left")]
    candidates = order[repeated]
    del order, sorted_keys
    texts, leading = rows.take(candidates).column("s"), rows.take(leaders).column("s")
    same = pc.fill_null(pc.equal(texts, leading), False).to_numpy(zero_copy_only=False)
    duplicates, firsts = candidates[same], leaders[same]
    if not same.all():
        duplicates, firsts = _settle_collisions(rows, keys, candidates[~same], duplicates, firsts)
    ascending = np.argsort(duplicates, kind="stable")
    return duplicates[ascending], firsts[ascending]


def _settle_collisions(
    rows: ChunkedRows,
    keys: np.ndarray,
    mismatched: np.ndarray,
    duplicates: np.ndarray,
    firsts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Redo the key groups where distinct sentences share a key, exactly, in Python (rare)."""
    colliding = np.isin(keys, np.unique(keys[mismatched]))
    positions = np.flatnonzero(colliding)
    first_by_text: dict[tuple[int, str], int] = {}
    extra_dups: list[int] = []
    extra_firsts: list[int] = []
    for position, text in zip(
        positions.tolist(), rows.take(positions).column("s").to_pylist(), strict=True
    ):
        group = (int(keys[position]), text)
        if group in first_by_text:
            extra_dups.append(position)
            extra_firsts.append(first_by_text[group])
        else:
            first_by_text[group] = position
    outside = ~np.isin(duplicates, positions)
    return (
        np.concatenate([duplicates[outside], np.array(extra_dups, dtype=np.int64)]),
        np.concatenate([firsts[outside], np.array(extra_firsts, dtype=np.int64)]),
    )
