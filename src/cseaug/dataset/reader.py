"""Reading published versions (the one place besides the writer that opens their Parquet)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pds

from cseaug.errors import InputError


def data_files(version_dir: str | Path) -> list[Path]:
    """The data Parquet files of a version, in order."""
    files = sorted((Path(version_dir) / "data").glob("*.parquet"))
    if not files:
        raise InputError(f"{version_dir} is not a dataset version: no data/*.parquet inside")
    return files


def iter_batches(
    version_dir: str | Path, columns: Sequence[str] | None = None, batch_size: int = 65_536
) -> Iterator[pa.RecordBatch]:
    """Stream the canonical rows of a version in record batches (flat memory)."""
    dataset = pds.dataset([str(p) for p in data_files(version_dir)], format="parquet")
    yield from dataset.to_batches(columns=list(columns) if columns else None, batch_size=batch_size)


def read_rows(version_dir: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """All canonical rows of a version as one table (for small versions and tests)."""
    return pds.dataset([str(p) for p in data_files(version_dir)], format="parquet").to_table(
        columns=list(columns) if columns else None
    )
