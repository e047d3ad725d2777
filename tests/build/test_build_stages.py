"""The LLM stage built from a run config, and its manifest records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cseaug.augment.pattern_sim import PatternSimulationStage
from cseaug.augment.ski import SKIStage
from cseaug.build.llm_stages import make_llm_stage
from cseaug.config import RunConfig
from cseaug.errors import ConfigError
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


def test_ski_stage_and_prompts_dir(tmp_path: Path) -> None:
    stage = make_llm_stage(config("ski"), ScriptedBackend(lambda r: "x"))
    assert isinstance(stage, SKIStage)
    assert stage.manifest()["example_set"] is None
    assert stage.manifest()["prompts"][0]["view"] == "knowledge"
    with pytest.raises(ConfigError, match="'ski' not found"):
        make_llm_stage(
            config("ski", generation={"prompts_dir": str(tmp_path)}), ScriptedBackend(lambda r: "x")
        )


def test_non_llm_method_is_refused() -> None:
    cfg = RunConfig.model_validate({"name": "t", "method": "osscse", "corpus": {"path": "c.txt"}})
    with pytest.raises(ConfigError, match="has no prompts"):
        make_llm_stage(cfg, ScriptedBackend(lambda r: "x"))
