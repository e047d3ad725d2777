"""The Prefect diagnostics task: written diagnostics become a markdown artifact with inlined plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import DiagnosticsConfig
from cseaug.diagnostics.version import write_diagnostics
from tests.diagnostics.diag_helpers import BagOfWordsEncoder, write_version

ROWS = [
    {"sentence": "a b c d", "positive": "a b c d e", "negative": "w x y z"},
    {"sentence": "one two three", "positive": "one two four", "negative": "five six"},
    {"sentence": "plain"},
]
CFG = DiagnosticsConfig(mer_bins=10, cs_bins=20)


@pytest.fixture
def diagnostics_dir(tmp_path: Path) -> Path:
    """Diagnostics of a three-row version, as a build writes them before it publishes."""
    version = write_version(tmp_path / "datasets" / "demo" / "v0001", ROWS)
    # The deterministic encoder stands in for MiniLM: these tests are about Prefect wiring.
    write_diagnostics(version, tmp_path / "diag", CFG, encoder=BagOfWordsEncoder())
    return tmp_path / "diag"


def test_artifact_key_is_a_valid_prefect_key():
    from cseaug_prefect.tasks.diagnostics import artifact_key

    assert artifact_key("diagnostics", "Wiki.STS", "v0003") == "diagnostics-wiki-sts-v0003"
    assert artifact_key("diagnostics", "__x__") == "diagnostics-x"


def test_task_body_publishes_inlined_plots_and_returns_paths(diagnostics_dir, monkeypatch):
    import cseaug_prefect.tasks.diagnostics as module

    published = []
    monkeypatch.setattr(module, "create_markdown_artifact", lambda **kw: published.append(kw))
    result = module.diagnostics_artifact_task.fn(
        str(diagnostics_dir), key="diagnostics-demo", title="demo/v0001"
    )
    assert result["plots"] == ["diagnostics/mer.png", "diagnostics/cs.png"] and result["rows"] == 3
    assert Path(result["summary"]).is_file()
    assert published[0]["key"] == "diagnostics-demo"
    assert published[0]["description"] == "MER / CS diagnostics of demo/v0001"
    assert published[0]["markdown"].count("data:image/png;base64,") == 2


@pytest.mark.slow
@pytest.mark.prefect
def test_flow_run_shows_the_markdown_artifact(prefect_harness, diagnostics_dir):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from cseaug_prefect.tasks.diagnostics import diagnostics_artifact_task

    @flow
    def diagnose(diagnostics_dir: str) -> dict:
        return diagnostics_artifact_task(diagnostics_dir, key="diagnostics-demo-v0001")

    result = diagnose(str(diagnostics_dir))
    assert result["rows"] == 3

    async def read() -> list:
        async with get_client() as client:
            key_filter = ArtifactFilter(key=ArtifactFilterKey(any_=["diagnostics-demo-v0001"]))
            return await client.read_artifacts(artifact_filter=key_filter)

    import asyncio

    artifacts = asyncio.run(read())
    assert len(artifacts) == 1 and artifacts[0].type == "markdown"
    assert "![MER by view](data:image/png;base64," in artifacts[0].data
