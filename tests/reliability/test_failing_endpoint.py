"""A build against an endpoint that fails every request, as a user runs it (issue 8, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import load_config
from cseaug.dataset.versions import latest_version, list_versions
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

pytestmark = [pytest.mark.reliability, pytest.mark.slow, pytest.mark.prefect]

DEMO = REPO / "configs" / "demo.yaml"


def overrides(base_url: str, root: Path, seed: int) -> list[str]:
    return [
        f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}",
        "llm.backend=openai-compatible",
        f"llm.base_url={base_url}",
        "llm.model=fake",
        "llm.max_retries=0",
        "sample.size=8",
        f"sample.seed={seed}",
        "diagnostics.enabled=false",
        "publish.min_pattern_share=0",  # the fake answers are not graded
        f"output.root={root}",
    ]


def test_a_build_whose_endpoint_fails_every_request_publishes_nothing(tmp_path: Path) -> None:
    """Proves 8.1 (the publish gate): after a good version, a `cseaug build` against a server
    that answers every request with a 500 exits with status 2 and one line that says why
    (no generated row, the rejects' reason) and how to go on, prints no traceback, publishes
    no version and leaves `latest` where it was (today: exit 0, a version of plain (s, s)
    pairs, `latest` moved to it)."""
    root = tmp_path / "storage"
    with FakeOpenAIServer() as healthy:
        run_build(load_config(DEMO, overrides(healthy.base_url, root, seed=1)))
    assert latest_version(root, "demo") == "v0001"

    failing = FakeOpenAIServer(policy=lambda _body: Action.status_code(500))
    with failing, RecordingProxy() as proxy:
        args = ["build", "--config", str(DEMO)]
        for override in overrides(failing.base_url, root, seed=2):
            args += ["--set", override]
        done = run_cseaug(args, build_environment(tmp_path / "prefect-home", proxy), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "nothing published" in line and "llm_error" in line
    assert "run the same command again" in line
    assert list_versions(root, "demo") == ["v0001"] and latest_version(root, "demo") == "v0001"


def test_a_build_against_a_dead_endpoint_is_one_line_and_publishes_nothing(tmp_path: Path) -> None:
    """Proves 8.9 for an unreachable endpoint (nothing listens on the port): whether the
    preflight's endpoint check or the publish gate stops it, the user reads one `error:`
    line, no traceback, exit status 2, and no version exists."""
    root = tmp_path / "storage"
    with RecordingProxy() as proxy:
        args = ["build", "--config", str(DEMO)]
        for override in overrides("http://127.0.0.1:9/v1", root, seed=1):
            args += ["--set", override]
        done = run_cseaug(args, build_environment(tmp_path / "prefect-home", proxy), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert len([line for line in done.stderr.splitlines() if line.startswith("error: ")]) == 1
    assert list_versions(root, "demo") == []
