"""The ``train-vaegpt-sim`` Prefect flow on a tiny GPT-2 and a tiny MRPC file (``prefect_harness``: tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.validations import count_validations

pytest.importorskip("torch")


@pytest.mark.slow
@pytest.mark.prefect
def test_flow_trains_a_generator(prefect_harness: None, tmp_path: Path) -> None:
    from cseaug_prefect.flows.train_vaegpt_sim import train_vaegpt_sim

    config = tiny_training_config(tmp_path)
    summary = train_vaegpt_sim(str(config), ["optim.learning_rate=0.001"])
    assert summary["steps"] == 2
    assert Path(summary["final_dir"], "vaegpt_sim.json").is_file()
    assert summary["best_dir"] is not None and summary["steps_per_second"] > 0
    assert summary["precision"] == "float32" and summary["device"] == "cpu"


def tiny_training_config(tmp_path: Path) -> Path:
    """A two-step training config of a tiny GPT-2 on three MRPC pairs, under ``tmp_path``."""
    from tests.tiny_models import build_tiny_gpt2

    base = build_tiny_gpt2(tmp_path / "gpt2")
    mrpc = tmp_path / "mrpc.txt"
    mrpc.write_text(
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t1\t2\tA man plays a guitar.\tA man is playing the guitar.\n"
        "1\t3\t4\tTwo dogs run in a field.\tTwo dogs are running through a field.\n"
        "1\t5\t6\tThe woman slices an onion.\tAn onion is being sliced by a woman.\n",
        encoding="utf-8",
    )
    config = tmp_path / "train.yaml"
    config.write_text(
        json.dumps(
            {
                "base_model": str(base),
                "output_dir": str(tmp_path / "run"),
                "device": "cpu",
                "data": {"mrpc": [str(mrpc)]},
                "optim": {"batch_size": 2, "max_steps": 2},
                "schedule": {"val_rouge_samples": 1},
                "generation": {"max_new_tokens": 4},
            }
        ),
        encoding="utf-8",
    )
    return config


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.parametrize("given", ["a validated config", "a config path"])
def test_the_flow_validates_its_config_once_at_its_start(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """A config path (a deployment run) is read and validated once, at the flow's start; a
    validated config is used as it is. The task is given the validated config and neither
    reads nor validates it again."""
    from cseaug.config import loading
    from cseaug.vaegpt import config as vaegpt_config
    from cseaug.vaegpt.config import VAEGPTTrainConfig, load_train_config
    from cseaug_prefect.flows.train_vaegpt_sim import train_vaegpt_sim

    path = tiny_training_config(tmp_path)
    config = load_train_config(path) if given == "a validated config" else str(path)
    calls = count_validations(monkeypatch, VAEGPTTrainConfig, loading, vaegpt_config)
    assert train_vaegpt_sim(config)["steps"] == 2
    assert calls == ([] if given == "a validated config" else ["read", "validate"])
