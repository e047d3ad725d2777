"""The Prefect diagnostics tasks: files written, a markdown artifact with inlined plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import DiagnosticsConfig
from tests.diagnostics.diag_helpers import BagOfWordsEncoder, write_version

ROWS = [
    {"sentence": "a b c d", "positive": "a b c d e", "negative": "w x y z"},
    {"sentence": "one two three", "positive": "one two four", "negative": "five six"},
    {"sentence": "plain"},
]
CFG = DiagnosticsConfig(mer_bins=10, cs_bins=20)


@pytest.fixture
def version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The deterministic encoder stands in for MiniLM: these tests are about Prefect wiring.
    monkeypatch.setattr(
        "cseaug.diagnostics.version.encoder_from_config",
        lambda cfg, cache_dir=None: BagOfWordsEncoder(),
    )
    return write_version(tmp_path / "datasets" / "demo" / "v0001", ROWS)


def test_artifact_key_is_a_valid_prefect_key():
    from cseaug_prefect.tasks.diagnostics import artifact_key

    assert artifact_key("Wiki.STS", "v0003") == "diagnostics-wiki-sts-v0003"
    assert artifact_key("__x__") == "diagnostics-x"


def test_task_body_writes_files_and_publishes_inlined_plots(version, tmp_path, monkeypatch):
    import cseaug_prefect.tasks.diagnostics as module

    published = []
    monkeypatch.setattr(module, "create_markdown_artifact", lambda **kw: published.append(kw))
    monkeypatch.setattr(module, "get_run_logger", lambda: __import__("logging").getLogger("test"))
    result = module.write_diagnostics_task.fn(
        str(version),
        str(tmp_path / "diag"),
        CFG.model_dump(),
        title="demo/v0001",
        key="diagnostics-demo",
    )
    assert result["plots"] == ["diagnostics/mer.png", "diagnostics/cs.png"] and result["rows"] == 3
    assert Path(result["summary"]).is_file()
    assert published[0]["key"] == "diagnostics-demo"
    assert published[0]["markdown"].count("data:image/png;base64,") == 2
    again = module.diagnostics_artifact_task.fn(str(tmp_path / "diag"), key="diagnostics-demo-2")
    assert (
        again["summary"] == result["summary"]
        and published[1]["markdown"] == published[0]["markdown"]
    )


@pytest.mark.slow
@pytest.mark.prefect
def test_flow_run_shows_the_markdown_artifact(prefect_harness, version, tmp_path):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from cseaug_prefect.tasks.diagnostics import write_diagnostics_task

    @flow
    def diagnose(rows_dir: str, out_dir: str) -> dict:
        return write_diagnostics_task(rows_dir, out_dir, CFG, key="diagnostics-demo-v0001")

    result = diagnose(str(version), str(tmp_path / "diag"))
    assert result["rows"] == 3

    async def read() -> list:
        async with get_client() as client:
            key_filter = ArtifactFilter(key=ArtifactFilterKey(any_=["diagnostics-demo-v0001"]))
            return await client.read_artifacts(artifact_filter=key_filter)

    import asyncio

    artifacts = asyncio.run(read())
    assert len(artifacts) == 1 and artifacts[0].type == "markdown"
    assert "![MER by view](data:image/png;base64," in artifacts[0].data
