"""Reading published versions, verified as they are read (:mod:`cseaug.dataset.verify`):
each data file is hashed and compared with its manifest's sha256 before a row is parsed.
Only a directory without a manifest (a staging directory, a bare copy) is read as it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.dataset.verify import check_listed, read_verified, recorded_sha256
from cseaug.errors import InputError

DATA_DIR = "data"


def data_files(version_dir: str | Path) -> list[Path]:
    """The data Parquet files of a version, in order."""
    files = sorted((Path(version_dir) / DATA_DIR).glob("*.parquet"))
    if not files:
        raise InputError(f"{version_dir} is not a dataset version: no data/*.parquet inside")
    return files


def iter_batches(
    version_dir: str | Path, columns: Sequence[str] | None = None, batch_size: int = 65_536
) -> Iterator[pa.RecordBatch]:
    """Stream the canonical rows of a version, one data file in memory at a time (InputError
    naming a file that fails its check)."""
    version_dir = Path(version_dir)
    files = data_files(version_dir)
    recorded = recorded_sha256(version_dir)
    if recorded is not None:
        check_listed(version_dir, files, recorded)
    for path in files:
        source = (
            str(path)
            if recorded is None
            else pa.BufferReader(read_verified(path, version_dir, recorded))
        )
        yield from pq.ParquetFile(source).iter_batches(
            batch_size=batch_size, columns=list(columns) if columns else None
        )


def read_rows(version_dir: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """All canonical rows of a version as one table (for small versions and tests), verified."""
    schema = pq.read_schema(data_files(version_dir)[0])
    if columns:
        schema = pa.schema([schema.field(name) for name in columns], metadata=schema.metadata)
    return pa.Table.from_batches(list(iter_batches(version_dir, columns)), schema=schema)


def augmentation_view(augmentations: pa.Array | pa.ChunkedArray, view: int) -> pa.Array:
    """The text of view number ``view`` of each row's ``augmentations`` (null where it has
    none): Generate-CSE's positive of epoch ``view``.

    Example:
        >>> from cseaug.dataset.schema import AUGMENTATION_TYPE
        >>> column = pa.array([[{"view": 0, "text": "a", "method": "shuffle"},
        ...                     {"view": 1, "text": "b", "method": "cutoff"}], None],
        ...                    pa.list_(AUGMENTATION_TYPE))
        >>> augmentation_view(column, 1).to_pylist()
        ['b', None]
    """
    if isinstance(augmentations, pa.ChunkedArray):
        augmentations = augmentations.combine_chunks()
    flat = pc.list_flatten(augmentations)
    chosen = pc.equal(pc.struct_field(flat, "view"), view)
    texts = pc.filter(pc.struct_field(flat, "text"), chosen)
    rows = pc.filter(pc.list_parent_indices(augmentations), chosen).to_numpy()
    positions = np.full(len(augmentations), -1, dtype=np.int64)
    positions[rows] = np.arange(len(rows))
    return pc.take(texts, pa.array(positions, mask=positions < 0))


def augmentation_views(version_dir: str | Path) -> int:
    """How many views the rows' ``augmentations`` hold: the highest view number + 1 (0: none)."""
    highest = -1
    for batch in iter_batches(version_dir, ["augmentations"]):
        numbers = pc.struct_field(pc.list_flatten(batch.column("augmentations")), "view")
        if len(numbers):
            highest = max(highest, pc.max(numbers).as_py())
    return highest + 1
