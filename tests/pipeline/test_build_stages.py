"""Stages built from a run config: the LLM stages and their manifest records, Generate-CSE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cseaug.augment.ngcse import PatternSimulationStage
from cseaug.augment.skicse import SKIStage
from cseaug.config import RunConfig
from cseaug.errors import ConfigError
from cseaug.pipeline.stages import (
    ServedModels,
    make_generate_cse_stage,
    make_llm_stage,
    make_stage,
)
from tests.augment.scripted_backend import ScriptedBackend


def config(method: str, **sections: object) -> RunConfig:
    return RunConfig.model_validate(
        {
            "name": "t",
            "method": method,
            "corpus": {"path": "corpus.txt"},
            "llm": {
                "backend": "openai-compatible",
                "model": "m",
                "base_url": "http://127.0.0.1:1/v1",
            },
            **sections,
        }
    )


def test_sts_stage_from_config(shared_data: Path) -> None:
    cfg = config(
        "sts",
        patterns={"source": "sts12", "path": str(shared_data / "sts12_train"), "seed": 5},
        generation={"derive_from": "positive"},
    )
    stage = make_llm_stage(cfg, ScriptedBackend(lambda r: "x"))
    assert isinstance(stage, PatternSimulationStage)
    assert stage.derive_from == "positive"
    record = json.loads(json.dumps(stage.manifest()))
    assert [p["name"] for p in record["prompts"]] == [
        "sts_positive",
        "sts_intermediate",
        "sts_negative",
    ]
    assert record["example_set"]["seed"] == 5 and record["example_set"]["source"] == "sts12"
    assert record["model"] == {
        "llm": {"backend": "scripted", "model": "scripted-model", "sampling": {}}
    }


def test_ski_stage_and_prompts_dir(tmp_path: Path) -> None:
    stage = make_llm_stage(config("ski"), ScriptedBackend(lambda r: "x"))
    assert isinstance(stage, SKIStage)
    assert stage.manifest()["example_set"] is None
    assert stage.manifest()["prompts"][0]["view"] == "knowledge"
    assert stage.manifest()["model"]["llm"]["backend"] == "scripted"
    with pytest.raises(ConfigError, match="'ski' not found"):
        make_llm_stage(
            config("ski", generation={"prompts_dir": str(tmp_path)}), ScriptedBackend(lambda r: "x")
        )


def test_non_llm_method_is_refused() -> None:
    cfg = RunConfig.model_validate({"name": "t", "method": "osscse", "corpus": {"path": "c.txt"}})
    with pytest.raises(ConfigError, match="has no prompts"):
        make_llm_stage(cfg, ScriptedBackend(lambda r: "x"))


def test_generate_cse_without_a_generator() -> None:
    cfg = RunConfig.model_validate(
        {"name": "g", "method": "generate_cse", "corpus": {"path": "c.txt"}}
    )
    stage = make_stage(cfg, ServedModels())
    assert stage.name == "generate_cse"
    assert stage.manifest()["model"]["generate_cse"]["generator"] is None


def test_generate_cse_with_a_missing_generator_names_the_fix(tmp_path) -> None:
    pytest.importorskip("torch")
    cfg = RunConfig.model_validate(
        {
            "name": "g",
            "method": "generate_cse",
            "corpus": {"path": "c.txt"},
            "generate_cse": {"generator": str(tmp_path)},
        }
    )
    with pytest.raises(ConfigError, match="train-vaegpt"):
        make_generate_cse_stage(cfg)
