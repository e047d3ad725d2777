"""A large `other` share streams through the writer without Python objects per row."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from cseaug.dataset.schema import CANONICAL_SCHEMA
from cseaug.dataset.staging import publish_version

BATCH = 10_000


def other_batches(n: int) -> Iterator[pa.RecordBatch]:
    """`other` rows built batch by batch, as a corpus reader streams them."""
    for start in range(0, n, BATCH):
        stop = min(n, start + BATCH)
        ids = pa.array([f"{i:016x}" for i in range(start, stop)])
        sentences = pa.array(
            [f"plain corpus sentence number {i} of the wiki dump" for i in range(start, stop)]
        )
        yield pa.record_batch(
            [ids, sentences, pa.repeat(pa.scalar("other"), stop - start)],
            schema=pa.schema([CANONICAL_SCHEMA.field(n) for n in ("id", "sentence", "split")]),
        )


def peak_python_memory(root: Path, manifest, n: int) -> int:
    tracemalloc.start()
    try:
        publish_version(
            other_batches(n), [], root=root, name=f"big{n}", manifest=manifest, rows_per_file=50_000
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_python_memory_stays_flat_as_rows_grow(tmp_path: Path, manifest) -> None:
    small = peak_python_memory(tmp_path, manifest, 40_000)
    large = peak_python_memory(tmp_path, manifest, 200_000)
    # 5x the rows; a writer that kept one Python object per row would grow ~5x.
    assert large < 1.3 * small + 1_000_000, (small, large)
