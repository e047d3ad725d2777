"""The ``train-vaegpt-sim`` Prefect flow on a tiny GPT-2 and a tiny MRPC file (``prefect_harness``: tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")


@pytest.mark.slow
@pytest.mark.prefect
def test_flow_trains_a_generator(prefect_harness: None, tmp_path: Path) -> None:
    from cseaug_prefect.flows.train_vaegpt_sim import train_vaegpt_sim
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
    summary = train_vaegpt_sim(str(config), ["optim.learning_rate=0.001"])
    assert summary["steps"] == 2
    assert Path(summary["final_dir"], "vaegpt_sim.json").is_file()
    assert summary["best_dir"] is not None and summary["steps_per_second"] > 0
    assert summary["precision"] == "float32" and summary["device"] == "cpu"
