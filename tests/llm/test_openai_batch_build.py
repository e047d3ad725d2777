"""A whole build on ``openai-batch`` publishes what the same build on ``openai`` publishes.

The loopback server answers chat requests and batch lines with the same answers; the corpus
and STS12 examples are the real files in ../shared/data.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.dataset.reader import read_rows
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import FakeOpenAIServer
from tests.wiki_sts_config import wiki_sts_config


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    """A fake server that answers view prompts as a model would (not the echo of the LLM-layer
    tests' server): these builds must keep their rows through the per-row checks."""
    with FakeOpenAIServer() as running:
        yield running


def config(shared_data: Path, root: Path, server: FakeOpenAIServer, backend: str) -> dict:
    return wiki_sts_config(
        shared_data,
        root,
        "wiki-sts-batch",
        {
            "backend": backend,
            "base_url": server.base_url,
            "model": "fake",
            "batch": {"poll_interval_s": 0.01, "max_poll_interval_s": 0.05},
        },
        sample_size=40,
        execution={"shard_size": 100},
    )


def build(shared_data: Path, root: Path, server: FakeOpenAIServer, backend: str) -> Path:
    cfg = RunConfig.model_validate(config(shared_data, root, server, backend))
    return run_build(cfg).version_dir


def test_a_batch_build_publishes_the_rows_of_an_online_build(
    shared_data: Path, tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-batch-build-0123456789")
    online = read_rows(build(shared_data, tmp_path / "online", server, "openai"))
    online_requests = sum(server.counts.values())

    batch = read_rows(build(shared_data, tmp_path / "batch", server, "openai-batch"))

    assert online_requests == 3 * 40
    assert server.state.batch_creations == 1  # one shard, one batch
    assert sum(server.counts.values()) == 2 * online_requests  # each request once more
    assert batch.num_rows == online.num_rows > 10_000
    assert batch.sort_by("id").equals(online.sort_by("id"))
    aigen = batch.filter(batch.column("split").to_numpy(zero_copy_only=False) == "aigen")
    assert aigen.num_rows == 40 and aigen.column("positive").null_count == 0
    assert aigen.column("positive")[0].as_py().startswith("echo: ")


_BUILD = """
import json, sys
from cseaug.pipeline.local import run_build
from cseaug.config import RunConfig
run_build(RunConfig.model_validate(json.loads(sys.argv[1])))
"""


def test_a_build_killed_while_its_batch_runs_is_resumed_without_paying_again(
    shared_data: Path, tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-batch-build-0123456789")
    data = config(shared_data, tmp_path, server, "openai-batch")
    server.state.hold_batches = True
    child = subprocess.Popen([sys.executable, "-c", _BUILD, json.dumps(data)], env=os.environ)
    try:
        deadline = time.monotonic() + 120
        while server.state.batches.get("batch_1", {}).get("status") != "in_progress":
            assert child.poll() is None, "the build ended before its batch was polled"
            assert time.monotonic() < deadline, "the build never submitted its batch"
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    server.state.hold_batches = False
    summary = run_build(RunConfig.model_validate(data))

    assert server.state.batch_creations == 1  # the resumed build re-attached
    assert summary.aigen == 40 and summary.token_usage["requests"] == 3 * 40
    assert sum(server.counts.values()) == 3 * 40  # every request answered once
    assert server.state.file_downloads == {"file-output-batch_1": 1}
