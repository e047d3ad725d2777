"""The publish gate (issue 8, item 1): a build that generated too little publishes nothing,
says why, and a rerun completes it without paying twice.

The LLM is the loopback server of ``tests/fake_openai_server.py``; the build runs in this
process without Prefect (:func:`cseaug.pipeline.local.run_build`) on the demo corpus.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.dataset.versions import latest_version, list_versions
from cseaug.errors import PublishGateError
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import Action, FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]


def demo_config(root: Path, base_url: str, **publish: float) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "gated",
            "method": "sts",
            "corpus": {"name": "demo", "path": str(REPO / "examples" / "demo_corpus.txt")},
            "sample": {"size": 12, "seed": 1},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "base_url": base_url,
                "model": "fake",
                "concurrency": 4,
                "max_retries": 0,
            },
            "output": {"root": str(root)},
            # the fake answers are not graded: these tests are of the generated-share gate
            "publish": {"min_pattern_share": 0, **publish},
            "diagnostics": {"enabled": False},
        }
    )


def fail_every_request(_body: dict) -> Action:
    return Action.status_code(500)


def fail_a_third_of_the_anchors(body: dict) -> Action:
    anchor = body["messages"][-1]["content"]
    return Action.status_code(503) if zlib.crc32(anchor.encode()) % 3 == 0 else Action.ok()


def test_a_build_with_no_generated_row_publishes_nothing(tmp_path: Path) -> None:
    """Every request fails: the build raises a one-paragraph error naming the share, the
    rejects' reason and how to go on, and no version (nor ``latest``) exists."""
    with FakeOpenAIServer(policy=fail_every_request) as server:
        cfg = demo_config(tmp_path, server.base_url)
        with pytest.raises(PublishGateError) as caught:
            run_build(cfg)
    message = str(caught.value)
    assert "nothing published" in message and "0 of 12 sampled anchors" in message
    assert "llm_error" in message and "run the same command again" in message
    assert list_versions(tmp_path, "gated") == [] and latest_version(tmp_path, "gated") is None


def test_the_gate_can_be_switched_off(tmp_path: Path) -> None:
    with FakeOpenAIServer(policy=fail_every_request) as server:
        summary = run_build(demo_config(tmp_path, server.base_url, min_generated_share=0))
    assert summary.aigen == 0 and summary.version == "v0001"


def test_a_rerun_after_the_gate_sends_only_what_failed_and_publishes(tmp_path: Path) -> None:
    """Below the configured share the build stops; once the endpoint is healthy, the same
    build publishes, and the answers of the first attempt come from the cache: only the
    requests that failed are sent again."""
    with FakeOpenAIServer(policy=fail_a_third_of_the_anchors) as server:
        cfg = demo_config(tmp_path, server.base_url, min_generated_share=0.95)
        with pytest.raises(PublishGateError, match=r"below publish\.min_generated_share 95%"):
            run_build(cfg)
        first = server.state.total
        failed = sum(
            n for content, n in server.counts.items() if zlib.crc32(content.encode()) % 3 == 0
        )
        assert 0 < failed < first
        server.state.policy = None  # the endpoint recovers
        summary = run_build(cfg)
        assert server.state.total - first == failed
    assert summary.version == "v0001" and summary.aigen > 0
