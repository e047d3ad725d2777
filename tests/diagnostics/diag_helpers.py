"""Helpers of the diagnostics tests: a deterministic encoder and small versions on disk."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from cseaug.dataset.schema import row_id, rows_table


class BagOfWordsEncoder:
    """Unit vectors of hashed word counts: CS grows with shared words, deterministic, no model."""

    name = "bag-of-words"
    dimension = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dimension] += 1.0
            out[i] /= max(np.linalg.norm(out[i]), 1e-12)
        return out

    def close(self) -> None:
        """Nothing to free."""


def canonical(records: Sequence[Mapping[str, Any]], corpus: str = "test") -> list[dict[str, Any]]:
    """Complete hand-written rows with ids and splits."""
    out = []
    for record in records:
        row = dict(record)
        row.setdefault("id", row_id(corpus, row["sentence"]))
        has_view = any(row.get(v) for v in ("positive", "intermediate", "negative", "knowledge"))
        row.setdefault("split", "aigen" if has_view else "other")
        out.append(row)
    return out


def write_version(directory: Path, records: Sequence[Mapping[str, Any]], files: int = 1) -> Path:
    """Write canonical rows as a version-like directory (``data/*.parquet``) and return it."""
    (directory / "data").mkdir(parents=True)
    table = rows_table(canonical(records))
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    for k in range(files):
        part = table.slice(bounds[k], bounds[k + 1] - bounds[k])
        pq.write_table(part, directory / "data" / f"train-{k:05d}-of-{files:05d}.parquet")
    return directory
