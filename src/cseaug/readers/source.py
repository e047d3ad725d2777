"""What every corpus reader returns (:class:`CorpusSource`), and the column checks and batch
shape they share: a ``text`` column and one column per given view, named by the view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from cseaug.config import CorpusConfig
from cseaug.errors import InputError
from cseaug.hashing import file_sha256

TEXT = "text"

BATCH_ROWS = 65_536

UTF8_BOM = b"\xef\xbb\xbf"

RejectRecord = dict[str, Any]


@dataclass
class CorpusSource:
    """A validated corpus, ready to be streamed: ``name`` (part of every row id), ``location``
    as configured, ``input_sha256`` of every input file, ``view_columns`` (view -> source
    column), ``record_key`` naming the record number in reject details (``line`` for text
    files), ``total_records`` when known up front, and ``reader_rejects``: records the parser
    itself dropped (malformed CSV rows), filled while :meth:`batches` runs.
    """

    name: str
    format: str
    location: str
    _read: Callable[[], Iterator[pa.RecordBatch]]
    input_sha256: Callable[[], dict[str, str]]
    view_columns: dict[str, str] = field(default_factory=dict)
    record_key: str = "record"
    total_records: int | None = None
    reader_rejects: list[RejectRecord] = field(default_factory=list)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Record batches with ``text`` (binary or string) and the view columns (string)."""
        try:
            yield from self._read()
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise InputError(f"cannot read corpus {self.location} ({self.format}): {exc}") from exc


def require_nonempty_file(path: Path) -> None:
    """Refuse an empty corpus file before any work."""
    if path.stat().st_size == 0:
        raise InputError(f"corpus file {path} is empty")


def check_columns(
    cfg: CorpusConfig, present: list[str], where: str, fmt: str
) -> tuple[str, dict[str, str], list[str]]:
    """The text column, the views and the columns to read, after checking that each is among
    ``present`` and that no view is the text column (every row's view would equal its anchor,
    which the per-row checks reject as ``identical_views``)."""
    listed = ", ".join(present) or "(none)"
    if cfg.text_column is None:
        raise InputError(
            f"corpus.text_column is required for {fmt} corpora; columns in {where}: {listed}"
        )
    if same := [view for view, column in cfg.view_columns.items() if column == cfg.text_column]:
        raise InputError(
            f"corpus.view_columns.{same[0]} is the text column '{cfg.text_column}': a view must be "
            "another column (a view equal to its anchor is rejected as identical_views)"
        )
    wanted = {"corpus.text_column": cfg.text_column} | {
        f"corpus.view_columns.{view}": column for view, column in cfg.view_columns.items()
    }
    for key, column in wanted.items():
        if column not in present:
            raise InputError(
                f"{key} '{column}' is not a column of {where}; columns present: {listed}"
            )
    columns = list(dict.fromkeys([cfg.text_column, *cfg.view_columns.values()]))
    return cfg.text_column, dict(cfg.view_columns), columns


def _as_text(
    values: pa.Array | pa.ChunkedArray, column: str, where: str, *, keep_binary: bool
) -> pa.Array:
    """A column as one string array (or binary, left for the cleaning step to decode)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return values.cast(pa.string())
    if keep_binary and (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return values.cast(pa.binary())
    if pa.types.is_null(kind):
        return pa.nulls(len(values), pa.string())
    raise InputError(f"column '{column}' of {where} has type {kind}, not text; name a text column")


def reader_batch(
    table: pa.Table | pa.RecordBatch, text_column: str, views: dict[str, str], where: str
) -> pa.RecordBatch:
    """The reader's output batch: ``text`` then the views, renamed by view."""
    arrays = [_as_text(table.column(text_column), text_column, where, keep_binary=True)]
    arrays += [_as_text(table.column(col), col, where, keep_binary=False) for col in views.values()]
    return pa.RecordBatch.from_arrays(arrays, names=[TEXT, *views])


def file_source(
    name: str,
    fmt: str,
    path: Path,
    read: Callable[[], Iterator[pa.RecordBatch]],
    files: list[Path] | None = None,
    **more: Any,
) -> CorpusSource:
    """The source of a corpus at ``path`` made of local ``files`` (default: ``path`` alone),
    each hashed when ``input_sha256`` is asked for."""
    hashed = files or [path]
    return CorpusSource(
        name, fmt, str(path), read, lambda: {str(f): file_sha256(f) for f in hashed}, **more
    )
