"""Schema enforcement: every table that reaches a Parquet file of a run or a version is
brought to its contract schema, or refused naming the column that does not fit.

Example:
    >>> import pyarrow as pa
    >>> from cseaug.dataset.schema import CANONICAL_SCHEMA
    >>> t = conform(pa.table({"id": ["a"], "sentence": ["A cat sat."], "split": ["other"]}), CANONICAL_SCHEMA)
    >>> t.schema.equals(CANONICAL_SCHEMA), t.column("heldout").to_pylist()
    (True, [False])
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.dataset.schema import SPLIT_AIGEN, SPLIT_OTHER
from cseaug.errors import InputError

SPLITS = frozenset({SPLIT_AIGEN, SPLIT_OTHER})


def conform(data: pa.Table | pa.RecordBatch, schema: pa.Schema, what: str = "table") -> pa.Table:
    """``data`` with exactly the columns, order and types of ``schema`` (missing nullable
    columns null, a missing ``heldout`` False, safe casts), or an InputError naming ``what``
    and the column that does not fit."""
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    if unknown := [name for name in table.column_names if schema.get_field_index(name) < 0]:
        raise InputError(
            f"{what}: columns not in the dataset contract: {unknown}; allowed: {schema.names}"
        )
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            try:
                column = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise InputError(
                    f"{what}: column '{field.name}' of type {column.type} cannot become {field.type}: {exc}"
                ) from exc
        elif field.nullable:
            column = pa.nulls(table.num_rows, field.type)
        elif field.name == "heldout":  # the writer assigns it at publish time
            column = pa.array([False] * table.num_rows, field.type)
        else:
            raise InputError(f"{what}: required column '{field.name}' is missing")
        if not field.nullable and column.null_count:
            raise InputError(
                f"{what}: column '{field.name}' has {column.null_count} null value(s) but may not be null"
            )
        if field.name == "split" and table.num_rows:
            bad = set(pc.unique(column).to_pylist()) - SPLITS
            if bad:
                raise InputError(
                    f"{what}: column '{field.name}' holds {sorted(map(str, bad))}; allowed: {sorted(SPLITS)}"
                )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def open_checked(path: Path, schema: pa.Schema, kind: str) -> pq.ParquetFile:
    """The Parquet file at ``path``, once its schema is ``schema`` (InputError naming ``kind``)."""
    found = pq.ParquetFile(path)
    if not found.schema_arrow.equals(schema, check_metadata=False):
        raise InputError(f"{path} does not have the {kind} schema: {found.schema_arrow}")
    return found
