"""The diagnostics encoder runs in a worker process and embeds while the LLM works (issue 14).

The encoder is a tiny randomly initialised BERT ([CLS] pooling), the LLM the loopback
OpenAI-compatible server, the corpus and STS12 examples the real files in ../shared/data.
The build itself runs in a fresh interpreter, so that what it imports can be checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from cseaug.config import RunConfig
from cseaug.dataset.reader import read_rows
from cseaug.diagnostics.views import present_views
from cseaug.pipeline.local import run_build
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import VIEWS as VIEWS_STAGE
from cseaug.pipeline.shard import generate_shard
from tests.encoders.test_worker import exited
from tests.fake_openai_server import FakeOpenAIServer
from tests.pipeline.test_build_run import make_config

pytest.importorskip("transformers")

VIEWS = ("positive", "intermediate", "negative")
HEAVY = ("torch", "transformers", "sentence_transformers")

BUILD = textwrap.dedent(
    """
    import json, sys, time
    from cseaug.pipeline.plan import plan_build
    from cseaug.pipeline.publish import publish_build
    from cseaug.pipeline.run import BuildRun
    from cseaug.pipeline.shard import generate_shard
    from cseaug.config import RunConfig

    cfg = RunConfig.model_validate_json(open(sys.argv[1]).read())
    with BuildRun(cfg) as run:
        plan = plan_build(run)
        outcomes = [generate_shard(run, index) for index in range(plan.shards)]
        # what the LLM's time would hide: wait until the worker has embedded the prefetched texts
        deadline = time.monotonic() + 120
        while run._encoder.overlap()["waiting"]:
            assert time.monotonic() < deadline, "the worker never caught up"
            time.sleep(0.2)
        summary = publish_build(run, outcomes)
    heavy = [name for name in sys.argv[2:] if name in sys.modules]
    print(json.dumps({"version_dir": str(summary.version_dir), "heavy": heavy}))
    """
)


def view_texts(table) -> list[str]:
    """Every view text of ``table`` (nulls left out)."""
    return [t for v in present_views(table) for t in table.column(v).drop_null().to_pylist()]


def diagnostics(tiny_bert: Path) -> dict:
    return {
        "enabled": True,
        "encoder": str(tiny_bert),
        "pooling": "cls",
        "max_seq_length": 32,
        "cs_sample": 1000,
    }


def build_in_a_fresh_interpreter(cfg: RunConfig, tmp_path: Path) -> dict:
    config = tmp_path / "config.json"
    config.write_text(cfg.model_dump_json(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(config), *HEAVY],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_build_embeds_views_while_generating_and_never_imports_torch_itself(
    shared_data: Path, tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer() as server:
        cfg = make_config(
            shared_data,
            tmp_path,
            server.base_url,
            diagnostics=diagnostics(tiny_bert),
            # the echo answers are one text for every level, which the quality gate stops
            publish={"min_pattern_share": 0},
        )
        built = build_in_a_fresh_interpreter(cfg, tmp_path)
        assert built["heavy"] == []  # the encoder lived in the worker process

        summary = json.loads(
            (Path(built["version_dir"]) / "diagnostics" / "summary.json").read_text()
        )
        cs = summary["cs"]
        # 2 shards of generated rows; every anchor and view of the pass was embedded
        # before publishing began (the anchors from the plan, the views as each shard ended)
        assert cs["rows"] == summary["rows_with_views"] > 100
        rows = read_rows(built["version_dir"]).filter(pc.is_valid(pc.field("positive")))
        texts = {t for view in ("sentence", *VIEWS) for t in rows.column(view).to_pylist()}
        embedding = cs["embedding"]
        assert embedding["texts"] == len(texts)
        assert embedding["before_publish"] == embedding["texts"]
        assert embedding["after_publish"] == 0
        assert (Path(built["version_dir"]) / "diagnostics" / "cs.png").is_file()
        # the version's report, listed and hashed like every file, its grid's CS computed
        # by the build's encoder worker
        manifest = json.loads((Path(built["version_dir"]) / "manifest.json").read_text())
        assert "diagnostics/report.html" in {f["path"] for f in manifest["files"]}
        page = (Path(built["version_dir"]) / "diagnostics" / "report.html").read_text()
        assert '"positive": [' in page and str(tiny_bert) in page

        # Every shard is finished now: nothing to overlap with, so the plan starts no worker;
        # an unchanged rebuild publishes nothing (its quality gate reads the cached vectors).
        def no_worker(*args: object, **kwargs: object) -> None:
            raise AssertionError("an encoder worker was started")

        with monkeypatch.context() as patched:
            patched.setattr("cseaug.encoders.worker.EncoderWorker.__init__", no_worker)
            with BuildRun(cfg) as again:
                plan_build(again)
        assert run_build(cfg).reused_version is not None


def test_views_reach_the_worker_while_the_shard_s_later_requests_are_in_flight(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[tuple[int, list[str]]] = []  # (requests the server had received, texts)
    asked: list[str] = []

    class RecordingWorker:
        def __init__(self, *args: object) -> None:
            pass

        def prefetch(self, texts: list[str]) -> None:
            handed.append((server.state.total, list(texts)))

        def encode(self, texts: list[str]) -> np.ndarray:  # the CS step, at the shard's end
            asked.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32) / 2

        def close(self) -> None:
            pass

    monkeypatch.setattr("cseaug.encoders.worker.EncoderWorker", RecordingWorker)
    with FakeOpenAIServer(latency_s=0.02) as server:
        cfg = make_config(
            shared_data,
            tmp_path,
            server.base_url,
            diagnostics={"enabled": True, "cs_sample": 1000},
            execution={"shard_size": 1000},  # one shard: nothing overlaps across shards
        )
        with BuildRun(cfg) as run:
            assert plan_build(run).shards == 1
            generate_shard(run, 0)
            rows = run.store.read("rows", 0, VIEWS_STAGE)
    requests = 3 * 130
    (_, anchors), *views = handed
    assert len(anchors) == 130
    during = [text for received, texts in views if received < requests for text in texts]
    # views went to the worker before the server had even received the shard's last requests
    assert during
    assert set(during) <= set(view_texts(rows))
    # and the CS step asked it for every view of the shard (those streamed are embedded)
    assert {text for _, texts in views for text in texts} <= set(view_texts(rows))
    assert set(view_texts(rows)) <= set(asked)


def test_closing_the_run_on_an_interrupt_ends_the_worker(
    shared_data: Path, tiny_bert: Path, tmp_path: Path
) -> None:
    cfg = make_config(
        shared_data, tmp_path, "http://127.0.0.1:9", diagnostics=diagnostics(tiny_bert)
    )
    with pytest.raises(KeyboardInterrupt), BuildRun(cfg) as run:
        run.start_encoder(["A cat sat."] * 3)
        worker = run.encoder()
        assert worker is not None and not exited(worker.pid)
        raise KeyboardInterrupt
    assert exited(worker.pid)
