"""The project's SQLite files open in several processes at the same moment.

Two builds (or Dask/Ray workers) may open a new response cache or embedding store at once;
SQLite answers one of two connections switching a new file to WAL "database is locked" at
once, without waiting, which crashed a build (CI, 2026-11-26).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPEN_AT = """
import sys, time
from pathlib import Path
from cseaug.encoders.store import EmbeddingStore
from cseaug.llm.cache import ResponseCache
folder, at = Path(sys.argv[1]), float(sys.argv[2])
time.sleep(max(0.0, at - time.time()))
ResponseCache(folder / "llm.sqlite")
EmbeddingStore(folder / "embeddings.sqlite", "encoder", 4)
"""


def test_processes_opening_new_files_at_the_same_moment_all_open_them(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for round_ in range(4):
        folder = tmp_path / str(round_)
        at = time.time() + 1.0  # every process has imported cseaug by then
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT, str(folder), str(at)],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        errors = [run.communicate(timeout=120)[1] for run in runs]
        assert [run.returncode for run in runs] == [0, 0, 0], errors
