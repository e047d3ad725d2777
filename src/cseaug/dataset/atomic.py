"""Files that appear whole or not at all: write a hidden sibling, fsync, rename.

Every writer that must survive a crash goes through :func:`atomic_path`, never opening an
existing file for writing: a hard link at the target to a published version's file is
replaced by the rename, and the file it linked to keeps its bytes.
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


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) as a new file renamed onto ``path`` (:func:`atomic_path`);
    returns ``path``.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.txt"
        >>> write_text_atomic(target, "hello\\n").read_text()
        'hello\\n'
    """
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
