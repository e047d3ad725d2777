"""Row access over record batches that never concatenates them (Arrow's ``take`` on a chunked
column would copy the whole corpus text), so the corpus is held once.

Example:
    >>> import numpy as np, pyarrow as pa
    >>> batches = [pa.record_batch({"s": ["a", "b"]}), pa.record_batch({"s": ["c"]})]
    >>> rows = ChunkedRows(batches, batches[0].schema)
    >>> rows.take(np.array([2, 0])).column("s").to_pylist()
    ['c', 'a']
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa


class ChunkedRows:
    """Rows stored as record batches of one ``schema``, addressed by global position."""

    def __init__(self, batches: list[pa.RecordBatch], schema: pa.Schema) -> None:
        self.batches = batches
        self.schema = schema
        self.offsets = np.cumsum([0, *(b.num_rows for b in batches)], dtype=np.int64)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def take(self, positions: np.ndarray) -> pa.RecordBatch:
        """The rows at ``positions`` (any order, repeats allowed), in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        order = np.argsort(positions, kind="stable")
        ordered = positions[order]
        chunk_of = np.searchsorted(self.offsets, ordered, side="right") - 1
        bounds = np.searchsorted(chunk_of, np.arange(len(self.batches) + 1))
        pieces = [
            self.batches[c].take(pa.array(ordered[bounds[c] : bounds[c + 1]] - self.offsets[c]))
            for c in range(len(self.batches))
            if bounds[c + 1] > bounds[c]
        ]
        gathered = pa.Table.from_batches(pieces, schema=self.schema).combine_chunks()
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return gathered.take(pa.array(inverse)).to_batches()[0]

    def filter(
        self, mask: np.ndarray, values: np.ndarray
    ) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
        """The rows where ``mask`` (one bool per row) is true, batch by batch, in order,
        each with the matching entries of ``values`` (a per-row numpy array)."""
        for index, batch in enumerate(self.batches):
            window = slice(self.offsets[index], self.offsets[index + 1])
            part = mask[window]
            if part.any():
                yield batch.filter(pa.array(part)), values[window][part]
