"""Files that appear whole or not at all: write a hidden sibling, fsync, rename.

Every writer of the project that must survive a crash (run-store shards, staged versions,
exports and their records, fetched files) goes through :func:`atomic_path`; it lives apart
from the run store so that readers of published data (the trainer) never import the store.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file or directory to disk (directories: so that a rename inside survives a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A hidden temporary sibling of ``path`` to write; renamed onto ``path`` (fsynced) on success,
    removed on failure, so a crash never leaves half a file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, path)
        fsync_path(path.parent)
    finally:
        tmp.unlink(missing_ok=True)
