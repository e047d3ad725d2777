"""Whole tables of a command's input file (.csv, .tsv, .jsonl, .parquet), read by Arrow.

For small tool inputs (sentences to generate synonyms for, generations to score); a
build's corpus is streamed by :mod:`cseaug.readers.corpus` instead.

Example:
    >>> from pathlib import Path
    >>> path = Path("/tmp/cseaug-read-table-doctest.csv")
    >>> _ = path.write_text("source,target\\nA cat sat.,A cat sits.\\n")
    >>> table_column(read_table(path), "target", path, "--target-column")
    ['A cat sits.']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from cseaug.errors import InputError


def read_table(path: Path) -> pa.Table:
    """The whole table of a .csv, .tsv (no quoting), .jsonl or .parquet file (an InputError
    when the file is missing or its suffix is none of those)."""
    if not path.is_file():
        raise InputError(f"file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pacsv.read_csv(path)
    if suffix == ".tsv":
        return pacsv.read_csv(
            path, parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False)
        )
    if suffix in (".jsonl", ".json"):
        return pajson.read_json(path)
    if suffix == ".parquet":
        return pq.read_table(path)
    raise InputError(
        f"{path}: unsupported file type '{suffix}'; use .csv, .tsv, .jsonl or .parquet"
    )


def table_column(table: pa.Table, name: str, path: Path, option: str) -> list[Any]:
    """The values of column ``name``; a missing column names the columns there and ``option``."""
    if name not in table.column_names:
        raise InputError(
            f"{path} has no column '{name}' (columns: {', '.join(table.column_names)}); pass {option} NAME"
        )
    return table.column(name).to_pylist()
