"""Parquet corpora: a file or a directory of ``*.parquet`` files, read a row batch at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.config import CorpusConfig
from cseaug.errors import InputError
from cseaug.readers.source import BATCH_ROWS, CorpusSource, check_columns, hash_files, reader_batch


def open_parquet(cfg: CorpusConfig, path: Path, name: str) -> CorpusSource:
    """A Parquet corpus (a file, or every ``*.parquet`` below a directory, in path order)."""
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"corpus directory {path} holds no *.parquet file")
    try:
        metas = [pq.ParquetFile(f) for f in files]
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"corpus {path} is not readable as Parquet: {exc}") from exc
    text_column, views = check_columns(cfg, metas[0].schema_arrow.names, str(files[0]), "parquet")
    total = sum(m.metadata.num_rows for m in metas)
    if total == 0:
        raise InputError(f"corpus {path} is empty (0 Parquet rows)")
    columns = list(dict.fromkeys([text_column, *views.values()]))

    def read() -> Iterator[pa.RecordBatch]:
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=BATCH_ROWS, columns=columns):
                yield reader_batch(batch, text_column, views, str(f))

    return CorpusSource(
        name=name,
        format="parquet",
        location=str(path),
        view_columns=views,
        total_records=total,
        _read=read,
        input_sha256=hash_files(files),
    )
