"""The project's SQLite files open in several processes at the same moment.

Two builds (or Dask/Ray workers) may open a new response cache or embedding store at once;
SQLite answers one of two connections switching a new file to WAL "database is locked" at
once, without waiting, which crashed a build (CI, 2026-11-26). Workers opening a response
cache of an earlier version at once must upgrade it once, not each add its columns (a race:
the old code failed about four runs in five of this module, each round a fresh chance).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cseaug.llm.base import ChatResponse
from cseaug.llm.cache import ResponseCache

REPO = Path(__file__).resolve().parents[1]
OPEN_AT = """
import sys, time
from pathlib import Path
from cseaug.encoders.store import EmbeddingStore
from cseaug.llm.cache import ResponseCache
folder, at = Path(sys.argv[1]), float(sys.argv[2])
while time.time() < at:  # a spin: sleep wakes processes milliseconds apart
    pass
ResponseCache(folder / "llm.sqlite")
EmbeddingStore(folder / "embeddings.sqlite", "encoder", 4)
"""


def open_at_the_same_moment(folder: Path, processes: int = 3) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    at = time.time() + 1.0  # every process has imported cseaug by then
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT, str(folder), str(at)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    errors = [run.communicate(timeout=120)[1] for run in runs]
    assert [run.returncode for run in runs] == [0] * processes, errors


@pytest.mark.parametrize("round_", range(2))
def test_processes_opening_new_files_at_the_same_moment_all_open_them(
    tmp_path: Path, round_: int
) -> None:
    open_at_the_same_moment(tmp_path)


@pytest.mark.parametrize("round_", range(3))
def test_processes_opening_a_cache_of_an_earlier_version_at_once_upgrade_it_once(
    tmp_path: Path, round_: int
) -> None:
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    cache.put("h", ChatResponse("h", "an answer", prompt_tokens=3, completion_tokens=2))
    cache.close()
    with sqlite3.connect(path) as db:  # the schema before answers had a payer and a digest
        db.execute("DROP INDEX responses_spent_by")
        db.execute("ALTER TABLE responses DROP COLUMN spent_by")
        db.execute("ALTER TABLE responses DROP COLUMN digest")
        db.execute("PRAGMA user_version = 0")
    open_at_the_same_moment(tmp_path, processes=4)
    found, mismatched = ResponseCache(path).lookup(["h"])
    assert found["h"].text == "an answer" and not mismatched
