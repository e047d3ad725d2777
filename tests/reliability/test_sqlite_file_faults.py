"""Every SQLite file the project writes, damaged or on a full disk: one line, never a traceback.

The response cache (and the Batch API ledger, tables of its file) and the embedding store
open their files through :func:`cseaug.sqlite_files.connect`; a damaged file is a
:class:`DamagedFileError` naming the file and the ``mv`` that sets it aside, a full disk an
``OSError`` ``ENOSPC`` naming it (both one line, exit status 2). The full disk is a real
16 MiB tmpfs (skipped where mounting is refused).
"""

from __future__ import annotations

import ast
import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cseaug.encoders.store import EmbeddingStore
from cseaug.errors import CseaugError, expected_os_error, os_error_message
from cseaug.llm.base import ChatResponse
from cseaug.llm.batch_ledger import BatchLedger, PendingUpload
from cseaug.llm.cache import ResponseCache
from cseaug.sqlite_files import DamagedFileError
from tests.reliability.test_full_disk import fill, small_disk  # noqa: F401 (a fixture)
from tests.reliability.test_llm_cache_faults import (
    overwrite_header,
    overwrite_pages,
    truncate_to_half,
)

pytestmark = pytest.mark.reliability

SRC = Path(__file__).resolve().parents[2] / "src" / "cseaug"
URL = "https://api.example/v1"


def _cache_write(cache: ResponseCache, i: int) -> None:
    digest = f"{i:064x}"
    cache.put(digest, ChatResponse(digest, f"answer {i} " + "word " * 200, completion_tokens=9))


def _cache_read(cache: ResponseCache) -> None:
    cache.lookup([f"{i:064x}" for i in range(len(cache))])


def _ledger_write(ledger: BatchLedger, i: int) -> None:
    keys = tuple(f"key {i} {k} " + "x" * 40 for k in range(20))
    ledger.record(f"batch_{i}", URL, PendingUpload(f"file-{i}", keys, 0.0))


def _store_write(store: EmbeddingStore, i: int) -> None:
    store.put_many([(i.to_bytes(16, "big"), np.full(384, i, dtype=np.float32))])


def _store_read(store: EmbeddingStore) -> None:
    store.get_many([i.to_bytes(16, "big") for i in range(len(store))])


FILES: dict[str, tuple[Callable[[Path], Any], Callable[[Any, int], None], Callable[[Any], Any]]] = {
    "LLM response cache": (ResponseCache, _cache_write, _cache_read),
    "Batch API ledger": (BatchLedger, _ledger_write, lambda ledger: ledger.open_batches(URL)),
    "embedding store": (
        lambda path: EmbeddingStore(path, "encoder", 384),
        _store_write,
        _store_read,
    ),
}
"""Each SQLite file: how it is opened, written (row ``i``) and read in full."""

OPENERS = {"llm/cache.py", "llm/batch_ledger.py", "encoders/store.py"}
"""The modules that open an SQLite file, each covered by :data:`FILES`."""


def test_every_sqlite_file_of_the_project_is_opened_by_the_one_opener_and_tested_here() -> None:
    """No module but ``sqlite_files.py`` imports ``sqlite3``; the modules that call its
    ``connect`` are those :data:`FILES` covers (a new SQLite file must be added here)."""
    importers, openers = set(), set()
    for module in SRC.rglob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and "sqlite3" in [a.name for a in node.names]:
                importers.add(str(module.relative_to(SRC)))
            if isinstance(node, ast.ImportFrom) and node.module == "cseaug.sqlite_files":
                openers.add(str(module.relative_to(SRC)))
    assert importers == {"sqlite_files.py"}
    assert openers == OPENERS


@pytest.mark.parametrize("damage", [truncate_to_half, overwrite_header, overwrite_pages])
@pytest.mark.parametrize("kind", list(FILES))
def test_each_damaged_sqlite_file_is_one_line_naming_it_and_how_to_set_it_aside(
    tmp_path: Path, kind: str, damage: Callable[[Path], None]
) -> None:
    """Proves 32.7: the embedding store gave tracebacks (``file is not a database``) where
    the LLM cache gave one line; each SQLite file, cut in half or overwritten, is a
    DamagedFileError (a CseaugError: one line, exit status 2) naming the file and the
    ``mv`` that sets it aside, whether opening, writing or reading finds the damage; the
    file is left as it was, and once set aside as told, a new one works."""
    open_file, write, read = FILES[kind]
    path = tmp_path / "file.sqlite"
    handle = open_file(path)
    for i in range(300):
        write(handle, i)
    handle.close()
    damage(path)
    size = path.stat().st_size
    with pytest.raises(DamagedFileError) as damaged:
        handle = open_file(path)
        write(handle, 300)
        read(handle)
    message = str(damaged.value)
    assert isinstance(damaged.value, CseaugError) and "\n" not in message
    assert f"`mv {path} {path}.damaged`" in message and "is damaged" in message, message
    assert path.stat().st_size == size

    path.rename(path.with_name("file.sqlite.damaged"))
    handle = open_file(path)
    write(handle, 0)
    read(handle)


@pytest.mark.parametrize("kind", list(FILES))
def test_each_sqlite_file_on_a_full_disk_is_one_line_and_keeps_what_was_committed(
    small_disk: Path,  # noqa: F811
    kind: str,
) -> None:
    """Proves 32.7: the embedding store gave a ``database or disk is full`` traceback; each
    SQLite file on a real disk that fills ends in an ``OSError`` ``ENOSPC`` naming the file,
    printed as one line (exit status 2) like every full disk; what was committed stays, and
    with room again the same handle writes on."""
    open_file, write, read = FILES[kind]
    path = small_disk / "file.sqlite"
    handle = open_file(path)
    write(handle, 0)
    filler = fill(small_disk)
    with pytest.raises(OSError) as full:
        for i in range(1, 100_000):
            write(handle, i)
    assert full.value.errno == errno.ENOSPC and expected_os_error(full.value)
    line = os_error_message(full.value)
    assert line.startswith(f"{path}: no space left on device") and "\n" not in line
    filler.unlink()
    write(handle, 100_000)
    read(handle)
    handle.close()
