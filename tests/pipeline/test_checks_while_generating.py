"""The per-row checks work out their anchors' and views' languages while the shard's LLM
requests are in flight (issue 20: the checks cost no extra wall time), not after the stage.

The LLM is the loopback OpenAI-compatible server, the corpus and STS12 examples the real
files in ../shared/data.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.run import VIEW_BATCH, BuildRun
from cseaug.pipeline.shard import generate_shard
from cseaug.quality import language
from tests.fake_openai_server import FakeOpenAIServer
from tests.pipeline.test_build_run import make_config


def test_languages_are_detected_while_the_shards_requests_are_in_flight(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    detected: list[tuple[bool, int, int]] = []  # (ahead, requests the server had, texts)
    real = language.detect

    def recording(texts: list[str]) -> list[language.Detection]:
        ahead = threading.current_thread().name.startswith("cseaug-language")
        detected.append((ahead, server.state.total, len(texts)))
        return real(texts)

    monkeypatch.setattr(language, "detect", recording)
    with FakeOpenAIServer(latency_s=0.02) as server:
        cfg = make_config(shared_data, tmp_path, server.base_url, execution={"shard_size": 1000})
        with BuildRun(cfg) as run:
            assert plan_build(run).shards == 1
            outcome = generate_shard(run, 0)
    requests = 3 * 130
    during = sum(n for ahead, received, n in detected if ahead and received < requests)
    after_the_stage = sum(n for ahead, _, n in detected if not ahead)
    assert outcome.rows > 100
    # the 130 anchors and the first views before the server had the shard's last requests
    assert during > 130 + VIEW_BATCH
    # after the stage, only the last views (fewer than one hand-over) were left to detect
    assert after_the_stage < VIEW_BATCH
