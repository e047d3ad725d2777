"""The ``train-sentence-encoder`` flow validates its training config once, at its edge."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cseaug.cli import app
from tests.flows.validations import count_validations

pytest.importorskip("sentence_transformers")


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.parametrize("edge", ["cseaug train-encoder", "deployment run"])
def test_a_training_run_reads_and_validates_its_config_once_at_its_edge(
    prefect_harness: None,
    publish,
    rows_factory,
    tiny_bert: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edge: str,
) -> None:
    """`cseaug train-encoder` validates the YAML and its --set values once and hands the flow
    the validated config; a deployment run (a config path and overrides) is validated once at
    the flow's start. Neither the flow nor its task reads or validates the config again."""
    from cseaug.config import loading
    from cseaug.trainer import config as train_config
    from cseaug.trainer.config import TrainConfig
    from cseaug_prefect.flows.train_sentence_encoder import train_sentence_encoder

    publish([rows_factory(12, 12)], name="once")  # its own scores artifact key
    config = tmp_path / "train.yaml"
    settings = {"objective": "simcse-unsup", "model": str(tiny_bert), "batch_size": 4}
    config.write_text(
        yaml.safe_dump({**settings, "device": "cpu", "evaluation": {"sets": [], "dev": None}})
    )
    root = tmp_path / "storage"
    calls = count_validations(monkeypatch, TrainConfig, loading, train_config)
    if edge == "cseaug train-encoder":
        args = ["train-encoder", "--version", "once/v0001", "--config", str(config)]
        result = CliRunner().invoke(app, [*args, "--set", "max_steps=2", "--root", str(root)])
        assert result.exit_code == 0, result.output
    else:
        train_sentence_encoder("once/v0001", str(config), root=str(root), overrides=["max_steps=2"])
    assert calls == ["read", "validate"]
    assert (root / "models" / "once-v0001-simcse-unsup" / "evaluation.json").is_file()
