"""``cseaug build``'s own checks, before any flow starts."""

from __future__ import annotations

import pytest

from cseaug.commands.build import refuse_secrets_in_overrides
from cseaug.errors import ConfigError


def test_an_override_holding_a_secret_is_refused_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Overrides become the flow run's parameters, stored by Prefect: a secret pasted into one
    is refused, and the message names the key, never the value."""
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    refuse_secrets_in_overrides(["sample.size=500", "llm.model=gpt-4o-mini"])
    with pytest.raises(ConfigError, match=r"--set description=\.\.\.") as caught:
        refuse_secrets_in_overrides(["sample.size=500", f"description=built with {key}"])
    assert key not in str(caught.value) and "environment variable" in str(caught.value)


def test_force_new_version_reaches_the_flow_and_an_unchanged_build_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """`--force-new-version` becomes the override output.force_new_version=true of the flow
    run; a summary that reuses a version is printed as the one `unchanged:` line first."""
    from typer.testing import CliRunner

    import cseaug_prefect.flows.build_hybrid_dataset as flow_module
    from cseaug.build.publish import BuildSummary
    from cseaug.cli import app

    calls: list[list[str]] = []
    summary = BuildSummary(
        dataset="demo", version="v0003", version_dir=tmp_path / "v0003", rows=4, aigen=2,
        other=2, rejects=0, rejects_by_stage={}, token_usage={}, seconds=0.1, exports=[],
        reused_version="demo/v0003",
    )  # fmt: skip

    def fake_flow(config: str, overrides: list[str]) -> dict:
        calls.append(overrides)
        return summary.as_dict()

    monkeypatch.setattr(flow_module, "build_hybrid_dataset", fake_flow)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A cat sat.\n", encoding="utf-8")
    args = ["build", "--config", "configs/demo.yaml", "--set", f"corpus.path={corpus}"]
    result = CliRunner().invoke(app, [*args, "--force-new-version"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert calls[-1][-1] == "output.force_new_version=true"
    assert result.output.splitlines()[0] == (
        "unchanged: demo/v0003 already holds this data; nothing new published "
        "(--force-new-version publishes anyway)"
    )
    CliRunner().invoke(app, args)
    assert "output.force_new_version=true" not in calls[-1]
