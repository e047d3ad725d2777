"""The intermediate store of one run, ``<root>/runs/<run_id>/<kind>[/<stage>]/``: shard
tables written atomically, so tasks exchange paths (docs/dataset-contract.md, "Run store").

Example:
    >>> import tempfile
    >>> from cseaug.dataset.schema import rows_table
    >>> store = RunStore(tempfile.mkdtemp(), "demo-run")
    >>> path = store.write("input", 0, rows_table([{"id": "a", "sentence": "A cat sat.", "split": "aigen"}]))
    >>> store.read("input", 0).num_rows
    1
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq

from cseaug.dataset.atomic import atomic_path
from cseaug.dataset.conform import conform, open_checked
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA
from cseaug.errors import InputError

ShardKind = Literal["input", "rows", "rejects"]

SHARD_SCHEMAS: dict[str, pa.Schema] = {
    "input": CANONICAL_SCHEMA,
    "rows": CANONICAL_SCHEMA,
    "rejects": REJECTS_SCHEMA,
}

SHARD_SUFFIX = ".parquet"


class RunStore:
    """Shard tables of one run under ``<root>/runs/<run_id>``: a run started again with the
    same id finds (and may skip) the shards it finished."""

    def __init__(self, root: str | Path, run_id: str) -> None:
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise InputError(f"run id '{run_id}' is not a plain directory name")
        self.path = Path(root) / "runs" / run_id

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    def folder(self, kind: ShardKind, stage: str | None = None) -> Path:
        """The folder of one kind of shard (and stage)."""
        if stage is not None and (not stage or "/" in stage or stage.startswith(".")):
            raise InputError(f"stage name '{stage}' is not a plain directory name")
        return self.path / kind / stage if stage else self.path / kind

    def shard_path(self, kind: ShardKind, index: int, stage: str | None = None) -> Path:
        """``<run>/<kind>[/<stage>]/shard-00012.parquet``."""
        return self.folder(kind, stage) / f"shard-{index:05d}{SHARD_SUFFIX}"

    def write(
        self,
        kind: ShardKind,
        index: int,
        data: pa.Table | Iterable[pa.Table | pa.RecordBatch],
        stage: str | None = None,
    ) -> Path:
        """Write (or atomically replace) one shard from a table or streamed tables/batches,
        each conformed to ``kind``'s schema (InputError, nothing written); returns its path."""
        path = self.shard_path(kind, index, stage)
        schema = SHARD_SCHEMAS[kind]
        with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
            for piece in [data] if isinstance(data, pa.Table) else data:
                table = conform(piece, schema, f"{kind} shard {index} of {self.path.name}")
                if table.num_rows:
                    writer.write_table(table)
        return path

    def exists(self, kind: ShardKind, index: int, stage: str | None = None) -> bool:
        """Whether the shard was written completely (temporary files never count)."""
        return self.shard_path(kind, index, stage).is_file()

    def read(self, kind: ShardKind, index: int, stage: str | None = None) -> pa.Table:
        """One shard as a table."""
        path = self.shard_path(kind, index, stage)
        if not path.is_file():
            raise InputError(
                f"{kind} shard {index} of run {self.path.name} was never written ({path})"
            )
        return pq.read_table(path, schema=SHARD_SCHEMAS[kind])

    def paths(self, kind: ShardKind, stage: str | None = None) -> list[Path]:
        """Finished shards of a kind (and stage), in index order; with no stage, every stage's too."""
        folder = self.folder(kind, stage)
        pattern = f"shard-*{SHARD_SUFFIX}" if stage else f"**/shard-*{SHARD_SUFFIX}"
        return sorted(folder.glob(pattern), key=lambda p: (p.parent.as_posix(), p.name))

    def iter_batches(self, kind: ShardKind, stage: str | None = None) -> Iterator[pa.RecordBatch]:
        """Stream every row of a kind's shards, shard by shard (flat memory)."""
        for path in self.paths(kind, stage):
            yield from open_checked(path, SHARD_SCHEMAS[kind], kind).iter_batches()
