"""A whole build over two endpoints, one of which dies mid-build, publishes every row.

The corpus and the STS12 examples are the real files in ../shared/data; the endpoints are
two loopback servers.
"""

from __future__ import annotations

from pathlib import Path

from cseaug.config import RunConfig
from cseaug.dataset.reader import read_rows
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import FakeOpenAIServer
from tests.wiki_sts_config import wiki_sts_config


def test_a_build_whose_endpoint_dies_finishes_on_the_other_and_pays_each_prompt_once(
    shared_data: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer(latency_s=0.02) as a, FakeOpenAIServer(latency_s=0.02) as b:
        a.stop_at_request(15)
        cfg = RunConfig.model_validate(
            wiki_sts_config(
                shared_data,
                tmp_path,
                "wiki-sts-two-endpoints",
                {
                    "backend": "openai-compatible",
                    "base_url": [a.base_url, b.base_url],
                    "model": "fake",
                    "concurrency": 8,
                },
                sample_size=40,
            )
        )
        summary = run_build(cfg)

    rows = read_rows(summary.version_dir)
    aigen = rows.filter(rows.column("split").to_numpy(zero_copy_only=False) == "aigen")
    assert summary.aigen == 40 and aigen.column("positive").null_count == 0
    answered_a, answered_b = sum(a.state.answered.values()), sum(b.state.answered.values())
    assert answered_a + answered_b == summary.token_usage["requests"] == 3 * 40
    assert a.state.total >= 15 and answered_b > answered_a  # a died early on
