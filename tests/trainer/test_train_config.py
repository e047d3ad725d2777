"""The training config: every key described, unknown keys and bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from cseaug.errors import ConfigError
from cseaug.trainer.config import TrainConfig, load_train_config


def _undescribed(model: type[BaseModel], prefix: str = "") -> list[str]:
    missing = []
    for name, field in model.model_fields.items():
        if not field.description:
            missing.append(prefix + name)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            missing += _undescribed(field.annotation, f"{prefix}{name}.")
    return missing


def test_every_key_is_described() -> None:
    assert _undescribed(TrainConfig) == []


def test_unknown_keys_and_bad_values_name_their_path(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump({"objective": "ngcse", "ngcse": {"margin": [0.1, 0.2]}}))
    with pytest.raises(ConfigError, match=r"ngcse\.margin"):
        load_train_config(path)
    with pytest.raises(ConfigError, match=r"osscse.alpha \(0.5\) must not exceed osscse.beta"):
        load_train_config(None, ["objective=osscse", "osscse.alpha=0.5", "osscse.beta=0.1"])
    with pytest.raises(ConfigError, match=r"skicse.ski_weights .* sum to at most 1"):
        load_train_config(None, ["objective=skicse-sup", "skicse.ski_weights=[0.6, 0.6]"])
