"""Plain result tables that are not dataset versions (tool outputs, probe splits).

They go through the dataset layer like everything else written as Parquet, and are
written atomically: a crashed command never leaves half a file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.dataset.atomic import atomic_path
from cseaug.errors import InputError

TABLE_SUFFIXES: tuple[str, ...] = (".parquet", ".jsonl")


def check_table_path(path: Path) -> None:
    """Refuse an output path whose suffix is not one :func:`write_table` writes."""
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(f"output {path} must end in {' or '.join(TABLE_SUFFIXES)}")


def write_table(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` as Parquet or JSON Lines (by the suffix of ``path``), atomically.

    Example:
        >>> write_table(pa.table({"a": [1]}), "/tmp/cseaug-doctest.jsonl").name
        'cseaug-doctest.jsonl'
    """
    path = Path(path)
    check_table_path(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() == ".parquet":
            pq.write_table(table, tmp)
        else:
            with tmp.open("w", encoding="utf-8") as handle:
                for batch in table.to_batches():
                    for row in batch.to_pylist():
                        handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
