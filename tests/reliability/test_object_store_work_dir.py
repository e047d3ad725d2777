"""An object-store build writes nothing under its working directory (issue 21, item 12).

Every local file of a build whose ``output.root`` is a URI (run store, LLM response cache,
embedding cache, staging, exports) lives in its work directory (``cseaug.roots.work_dir``).
The embedding cache used to go to ``./s3:/bucket/.../cache/embeddings`` under the working
directory, and the build failed at publish where that was not writable (the compose
stack's worker runs in ``/app``, owned by root). The test runs as root, which ignores file
modes, so besides a working directory of mode 0555 it checks that nothing was created in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cseaug.roots import default_work_dir
from tests.fake_openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]

BUILD = """
import sys
from cseaug.pipeline.local import run_build
from cseaug.config import load_config

print(run_build(load_config(sys.argv[1], sys.argv[2:])).version_dir)
"""


def test_an_object_store_build_from_a_read_only_directory_writes_nothing_there(
    tmp_path: Path, tiny_bert: Path
) -> None:
    root = f"memory://cseaug-test-{uuid.uuid4().hex}/datasets-bucket"
    cwd = tmp_path / "app"
    cwd.mkdir()
    cwd.chmod(0o555)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "CSEAUG_PROGRESS": "0"}
    try:
        with FakeOpenAIServer() as server:
            overrides = [
                f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
                "llm.backend=openai-compatible",
                f"llm.base_url={server.base_url}",
                "llm.model=fake",
                f"output.root={root}",
                "publish.min_pattern_share=0",  # echo answers: one text for every level
                "diagnostics.enabled=true",
                "diagnostics.embedding_cache=true",
                f"diagnostics.encoder={tiny_bert}",
                "diagnostics.pooling=cls",
                "diagnostics.max_seq_length=32",
            ]
            done = subprocess.run(
                [sys.executable, "-c", BUILD, str(REPO / "configs" / "demo.yaml"), *overrides],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
    finally:
        cwd.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(cwd.iterdir()) == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        work = default_work_dir(root)
    assert (work / "cache" / "embeddings").is_dir()
    assert (work / "cache" / "llm.sqlite").is_file()
