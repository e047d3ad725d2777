"""VAEGPT-Sim training loop: checkpoints, best/final generators, metrics, resume, bfloat16 autocast on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cseaug.vaegpt.config import VAEGPTTrainConfig
from cseaug.vaegpt.data import PairSplits
from cseaug.vaegpt.generate import VAEGPTSimGenerator
from cseaug.vaegpt.train import checkpoints, train_vaegpt
from tests.vaegpt.toy_pairs import TOY_PAIRS


def train_config(tiny_gpt2: Path, out: Path, **changes) -> VAEGPTTrainConfig:
    data = {
        "base_model": str(tiny_gpt2),
        "output_dir": str(out),
        "device": "cpu",
        "optim": {"batch_size": 3, "max_steps": 4, "learning_rate": 1e-3},
        "schedule": {"eval_every": 2, "save_every": 2, "log_every": 1, "val_rouge_samples": 2},
        "generation": {"max_new_tokens": 6, "device": "cpu"},
    }
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            data.setdefault(section, {})[name] = value
        else:
            data[section] = value
    return VAEGPTTrainConfig.model_validate(data)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_train_checkpoint_and_resume(tiny_gpt2: Path, tmp_path: Path) -> None:
    splits = PairSplits(TOY_PAIRS[:6], TOY_PAIRS[6:])
    first = train_vaegpt(train_config(tiny_gpt2, tmp_path / "run"), splits)
    assert first.steps == 4
    assert (
        first.best_dir is not None and first.best_rouge is not None and 0 <= first.best_rouge <= 1
    )
    assert [p.name for p in checkpoints(tmp_path / "run")] == [
        "checkpoint-00000002",
        "checkpoint-00000004",
    ]
    assert first.stats["steps_per_second"] > 0
    log = records(first.metrics_path)
    assert [r["step"] for r in log if r["kind"] == "train"] == [1, 2, 3, 4]
    evals = [r for r in log if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [2, 4] and all(
        "val_rouge" in r and "val_loss" in r for r in evals
    )
    # 6 pairs in batches of 3: two steps per epoch
    assert [r["epoch"] for r in log if r["kind"] == "train"] == [0, 0, 1, 1]

    second = train_vaegpt(
        train_config(
            tiny_gpt2,
            tmp_path / "run",
            optim={"batch_size": 3, "max_steps": 6, "learning_rate": 1e-3},
        ),
        splits,
    )
    assert second.steps == 6
    log = records(second.metrics_path)
    starts = [r for r in log if r["kind"] == "start"]
    assert starts[-1]["resumed_from"].endswith("checkpoint-00000004")
    assert [r["step"] for r in log if r["kind"] == "train"] == [1, 2, 3, 4, 5, 6]
    assert [p.name for p in checkpoints(tmp_path / "run")] == [
        "checkpoint-00000004",
        "checkpoint-00000006",
    ]

    generator = VAEGPTSimGenerator.load(second.final_dir)
    assert len(generator.generate(["A man is playing a guitar"])[0]) == 1


def test_train_without_validation_or_checkpoint_schedule(tiny_gpt2: Path, tmp_path: Path) -> None:
    cfg = train_config(
        tiny_gpt2,
        tmp_path / "run",
        precision="bfloat16",
        schedule={"log_every": 1, "val_rouge_samples": 0},
        optim={"batch_size": 4, "max_steps": 1, "learning_rate": 1e-3},
    )
    result = train_vaegpt(cfg, PairSplits(TOY_PAIRS[:4], TOY_PAIRS[4:6]))
    assert result.steps == 1 and result.best_rouge is None
    assert result.stats["precision"] == "bfloat16"
    evals = [r for r in records(result.metrics_path) if r["kind"] == "eval"]
    # max_steps ended the run mid-epoch: it still validates (loss only) and checkpoints once
    assert len(evals) == 1 and "val_rouge" not in evals[0]
    assert [p.name for p in checkpoints(tmp_path / "run")] == ["checkpoint-00000001"]
    assert (tmp_path / "run" / "final").is_dir() and result.best_dir == tmp_path / "run" / "best"
