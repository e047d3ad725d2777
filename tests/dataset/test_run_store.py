"""RunStore: shard tables of a run, atomic and idempotent."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cseaug.dataset import atomic
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA
from cseaug.dataset.shards import RunStore
from cseaug.errors import InputError


def test_write_read_and_list(tmp_path: Path, rows_factory, rejects_factory) -> None:
    store = RunStore(tmp_path, "run-1")
    assert store.path == tmp_path / "runs" / "run-1"
    store.write("input", 1, rows_factory(5, 0))
    store.write("input", 0, rows_factory(3, 0))
    store.write("rows", 0, rows_factory(3, 0), stage="llm")
    store.write("rows", 1, rows_factory(0, 4, start=100))
    store.write("rejects", 0, rejects_factory(2), stage="llm")
    assert [p.name for p in store.paths("input")] == ["shard-00000.parquet", "shard-00001.parquet"]
    assert store.read("input", 1).schema.equals(CANONICAL_SCHEMA)
    assert store.read("rejects", 0, stage="llm").schema.equals(REJECTS_SCHEMA)
    assert sum(b.num_rows for b in store.iter_batches("rows")) == 7
    assert store.exists("rows", 0, stage="llm") and not store.exists("rows", 5)


def test_rewrite_replaces_the_shard_whole(tmp_path: Path, rows_factory) -> None:
    store = RunStore(tmp_path, "run")
    store.write("rows", 0, rows_factory(10, 0))
    store.write("rows", 0, rows_factory(2, 0))
    assert store.read("rows", 0).num_rows == 2
    assert [p.name for p in store.path.rglob("*") if p.is_file()] == ["shard-00000.parquet"]


def test_streams_an_iterable_of_batches(tmp_path: Path, rows_factory) -> None:
    store = RunStore(tmp_path, "run")
    big = rows_factory(0, 1000)
    path = store.write("rows", 0, iter(big.to_batches(max_chunksize=100)))
    assert pq.ParquetFile(path).metadata.num_rows == 1000


def test_a_failed_write_leaves_no_file_and_keeps_the_old_one(tmp_path: Path, rows_factory) -> None:
    store = RunStore(tmp_path, "run")
    store.write("rows", 0, rows_factory(3, 0))

    def crashing():
        yield rows_factory(5, 0)
        raise RuntimeError("worker died mid-shard")

    with pytest.raises(RuntimeError):
        store.write("rows", 0, crashing())
    assert store.read("rows", 0).num_rows == 3
    assert not [p for p in store.path.rglob(".*")]


def test_schema_violation_writes_nothing(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "run")
    with pytest.raises(InputError, match="rows shard 0"):
        store.write("rows", 0, pa.table({"id": ["x"], "sentence": ["s"], "split": ["bogus"]}))
    assert not store.exists("rows", 0)


def test_bad_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        RunStore(tmp_path, "../escape")
    store = RunStore(tmp_path, "run")
    with pytest.raises(InputError):
        store.shard_path("rows", 0, stage="../x")
    with pytest.raises(InputError, match="never written"):
        store.read("rows", 9)


def test_fsync_path_flushes_the_file_or_directory_itself(tmp_path: Path, monkeypatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", recording_fsync)
    (tmp_path / "f").write_text("x")
    atomic.fsync_path(tmp_path / "f")
    atomic.fsync_path(tmp_path)
    assert synced == [(tmp_path / "f").stat().st_ino, tmp_path.stat().st_ino]
    with pytest.raises(FileNotFoundError):
        atomic.fsync_path(tmp_path / "missing")
