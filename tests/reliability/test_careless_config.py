"""Secrets put where they do not belong are refused before anything is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug

pytestmark = pytest.mark.reliability

DEMO = str(REPO / "configs" / "demo.yaml")
CORPUS = str(REPO / "examples" / "demo_corpus.txt")
PASSWORD = "s3cret-pass-987"


@pytest.mark.parametrize(
    "override",
    [
        f"llm.base_url=http://user:{PASSWORD}@127.0.0.1:9/v1",
        f"llm.base_url=http://127.0.0.1:9/v1?api_key={PASSWORD}",
        f"llm.api_key_env={PASSWORD}",
    ],
)
def test_credentials_in_the_config_fail_in_one_line_and_store_nothing(
    tmp_path: Path, override: str
) -> None:
    """Proves 9.5: a URL with credentials (or a key in place of its variable's name) ends the
    build in about a second with exit status 2 and one line that says the key belongs in an
    environment variable; the secret is not printed, and no output root, run store or
    Prefect database (where it would have been stored) is created."""
    with RecordingProxy() as proxy:
        env = build_environment(tmp_path / "prefect-home", proxy)
        args = ["build", "--config", DEMO, "--set", f"corpus.path={CORPUS}"]
        args += ["--set", "llm.backend=openai-compatible"]
        args += ["--set", "llm.base_url=http://127.0.0.1:9/v1", "--set", "llm.model=m"]
        args += ["--set", f"output.root={tmp_path / 'storage'}", "--set", override]
        done = run_cseaug(args, env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "environment variable" in lines[0], done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "storage").exists() and not (tmp_path / "prefect-home").exists()
