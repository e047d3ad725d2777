"""``cseaug train-encoder`` runs the ``train-sentence-encoder`` flow under Prefect's harness."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.errors import ConfigError

pytest.importorskip("sentence_transformers")


CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "train"


def test_a_prompt_pooling_on_a_sentence_transformers_model_fails_before_prefect_starts(
    publish, rows_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Final presets' [MASK] pooling on all-MiniLM-L6-v2 is one line, not a run that
    silently trains MiniLM's own pooling."""
    import sys

    monkeypatch.delitem(sys.modules, "cseaug_prefect.flows.train_sentence_encoder", raising=False)
    publish([rows_factory(4, 4)])
    result = CliRunner().invoke(
        app,
        ["train-encoder", "--version", "demo/v0001",
         "--config", str(CONFIGS / "ngcse-wiki-sts-ht-final.yaml"),
         "--set", "model=all-MiniLM-L6-v2", "--root", str(tmp_path / "storage")],
    )  # fmt: skip
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception).startswith(
        "all-MiniLM-L6-v2 is a sentence-transformers model with its own pooling; pooling "
        "'prompt' is the pooling of a plain transformers model"
    )
    assert "cseaug_prefect.flows.train_sentence_encoder" not in sys.modules


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.shared_data
def test_cli_trains_through_the_flow_and_shows_the_scores(
    prefect_harness: None, publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    from prefect import get_client

    publish([rows_factory(12, 12)])
    config = tmp_path / "train.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "objective": "simcse-unsup",
                "model": str(tiny_bert),
                "batch_size": 4,
                "device": "cpu",
                "evaluation": {"data_dir": str(shared_data), "sets": ["STS-B"], "max_pairs": 20},
            }
        )
    )
    root = tmp_path / "storage"
    factory = logging.getLogRecordFactory()
    result = CliRunner().invoke(
        app,
        ["train-encoder", "--version", "demo/v0001", "--config", str(config), "--set",
         "max_steps=3", "--root", str(root)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # The flow itself (CliRunner skips the `cseaug` entry point) scrubs its log records.
    scrubbing = logging.getLogRecordFactory()
    logging.setLogRecordFactory(factory)
    record = scrubbing("t", logging.INFO, __file__, 1, "via %s", ("http://u:p@h/v1",), None)
    assert record.getMessage() == "via http://***@h/v1"
    model_dir = root / "models" / "demo-v0001-simcse-unsup"
    record = json.loads((model_dir / "evaluation.json").read_text())
    assert record["steps"] == 3 and record["dataset"] == "demo/v0001"
    assert "| STS-B |" in result.output

    async def runs_artifacts_and_logs():
        async with get_client() as client:
            return (
                await client.read_flow_runs(),
                await client.read_artifacts(),
                await client.read_logs(),
            )

    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()  # the run's logs reach the API in background batches
    runs, artifacts, logs = asyncio.run(runs_artifacts_and_logs())
    assert any(r.name and r.state and r.state.is_completed() for r in runs)
    # dill's dis.dis output (datasets' fingerprinting) must not become log lines (log_prints)
    assert not [log.message for log in logs if "LOAD_GLOBAL" in log.message]
    assert any("STS-B dev at step 3: Spearman" in log.message for log in logs)
    scores = [a for a in artifacts if a.key == "scores-demo-v0001-simcse-unsup"]
    assert scores and "| STS-B |" in scores[0].data


def test_a_bad_training_config_fails_before_prefect_starts(tmp_path: Path) -> None:
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump({"objective": "simcse-unsup", "batch_size": 1}))
    result = CliRunner().invoke(
        app, ["train-encoder", "--version", "demo/v0001", "--config", str(config)]
    )
    assert result.exit_code != 0
    assert "batch_size" in str(result.exception)


def test_an_override_holding_a_secret_is_refused_before_prefect_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overrides become the flow run's stored parameters, as with ``cseaug build``."""
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump({"objective": "simcse-unsup"}))
    result = CliRunner().invoke(
        app,
        ["train-encoder", "--version", "demo/v0001", "--config", str(config), "--set",
         f"model={key}"],
    )  # fmt: skip
    assert isinstance(result.exception, ConfigError)
    assert "--set model=..." in str(result.exception) and key not in str(result.exception)


def test_every_shipped_training_config_validates() -> None:
    from cseaug.trainer.config import load_train_config

    configs = sorted(CONFIGS.glob("*.yaml"))
    objectives = {load_train_config(path).objective for path in configs}
    assert objectives == {
        "simcse-unsup", "simcse-sup", "ngcse", "osscse", "skicse-unsup", "skicse-sup",
        "generate-cse",
    }  # fmt: skip


def test_an_uncached_hub_model_offline_fails_before_prefect_starts(
    publish, rows_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delitem(sys.modules, "cseaug_prefect.flows.train_sentence_encoder", raising=False)
    publish([rows_factory(4, 4)])
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump({"objective": "simcse-unsup", "model": "bert-base-uncased"}))
    result = CliRunner().invoke(
        app,
        ["train-encoder", "--version", "demo/v0001", "--config", str(config),
         "--root", str(tmp_path / "storage")],
    )  # fmt: skip
    assert isinstance(result.exception, ConfigError)
    message = str(result.exception)
    assert "'bert-base-uncased' is not in the local Hugging Face cache" in message
    assert "`hf download bert-base-uncased`" in message
    assert "cseaug_prefect.flows.train_sentence_encoder" not in sys.modules


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.shared_data
def test_cli_with_seeds_trains_each_and_prints_mean_and_std(
    prefect_harness: None, publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    publish([rows_factory(12, 12)])
    config = tmp_path / "train.yaml"
    config.write_text(
        yaml.safe_dump(
            {"objective": "simcse-unsup", "model": str(tiny_bert), "batch_size": 4,
             "max_steps": 2, "device": "cpu",
             "evaluation": {"data_dir": str(shared_data), "sets": ["STS-B"], "max_pairs": 20}}
        )
    )  # fmt: skip
    out = tmp_path / "models" / "seeded"
    result = CliRunner().invoke(
        app,
        ["train-encoder", "--version", "demo/v0001", "--config", str(config), "--root",
         str(tmp_path / "storage"), "--out", str(out), "--seeds", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "seed-42" / "evaluation.json").is_file()
    assert (out / "seed-43" / "evaluation.json").is_file()
    summary = json.loads((out / "seeds.json").read_text())
    assert summary["seeds"] == [42, 43]
    assert "| set | mean ± std | seed 42 | seed 43 |" in result.output
    assert result.output.count("trained simcse-unsup (seed ") == 2
