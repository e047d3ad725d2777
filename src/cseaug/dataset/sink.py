"""A rotating Parquet sink: rows of one schema into files of at most ``rows_per_file`` rows,
in row groups of :data:`ROW_GROUP_ROWS`, named ``<split>-0000k-of-0000N.parquet`` by
:meth:`ParquetSink.finish` once N is known. Memory stays at one row group.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pyarrow as pa
    >>> folder = Path(tempfile.mkdtemp())
    >>> sink = ParquetSink(folder, pa.schema([("x", pa.int64())]), rows_per_file=2)
    >>> sink.write(pa.table({"x": [1, 2, 3]}))
    >>> [p.name for p in sink.finish()]
    ['train-00000-of-00002.parquet', 'train-00001-of-00002.parquet']
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.errors import InputError

ROW_GROUP_ROWS = 65_536


class ParquetSink:
    """Writes conformed tables of ``schema`` into rotating files ``<split>-*`` under ``folder``."""

    def __init__(
        self, folder: Path, schema: pa.Schema, rows_per_file: int, split: str = "train"
    ) -> None:
        if rows_per_file < 1:
            raise InputError(f"rows_per_file must be >= 1, got {rows_per_file}")
        self.folder = folder
        self.schema = schema
        self.rows_per_file = rows_per_file
        self.split = split
        self._writer: pq.ParquetWriter | None = None
        self._parts: list[Path] = []
        self._rows_in_part = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        """Append ``table`` (buffered; full row groups and files are written as they fill)."""
        while table.num_rows:
            room = self.rows_per_file - self._rows_in_part - self._pending_rows
            piece, table = table.slice(0, room), table.slice(room)
            self._pending.append(piece)
            self._pending_rows += piece.num_rows
            if (
                self._pending_rows >= ROW_GROUP_ROWS
                or self._rows_in_part + self._pending_rows == self.rows_per_file
            ):
                self._flush()

    def finish(self, empty_file: bool = True) -> list[Path]:
        """Write what is buffered, close the files and give them their final names (in order);
        without rows, one empty file holds the schema when ``empty_file``."""
        self._flush()
        self.close()
        if not self._parts and empty_file:
            part = self.folder / f"{self.split}-part-00000.parquet.tmp"
            pq.write_table(self.schema.empty_table(), part)
            self._parts.append(part)
        total = len(self._parts)
        files = [
            part.rename(part.with_name(f"{self.split}-{index:05d}-of-{total:05d}.parquet"))
            for index, part in enumerate(self._parts)
        ]
        self._parts = []
        return files

    def close(self) -> None:
        """Close the open file, if any; the next rows start a new one."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._rows_in_part = 0

    def _flush(self) -> None:
        if not self._pending_rows:
            return
        if self._writer is None:
            part = self.folder / f"{self.split}-part-{len(self._parts):05d}.parquet.tmp"
            self._parts.append(part)
            self._writer = pq.ParquetWriter(part, self.schema)
        self._writer.write_table(pa.concat_tables(self._pending), row_group_size=ROW_GROUP_ROWS)
        self._rows_in_part += self._pending_rows
        self._pending, self._pending_rows = [], 0
        if self._rows_in_part >= self.rows_per_file:
            self.close()
