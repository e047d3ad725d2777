"""The training config: every key described, unknown keys and bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from cseaug.errors import ConfigError
from cseaug.trainer.config import TrainConfig, load_train_config
from cseaug.trainer.train import ngcse_setting


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


PRESETS = Path(__file__).resolve().parents[2] / "configs" / "train"


@pytest.mark.parametrize(
    ("preset", "epochs", "generated", "domain"),
    [
        ("ngcse", 1, 16, "Wiki"),
        ("ngcse-wiki-sts-ht-final", 1, 48, "Wiki"),
        ("ngcse-nli-sts-ht-final", 3, 48, "NLI"),
    ],
)
def test_an_ngcse_run_says_which_domain_setting_it_trains_and_how_to_train_either(
    preset: str, epochs: int, generated: int, domain: str
) -> None:
    """The authors' sts_ht.sh train 1 epoch with 16 generated rows per batch on Wikipedia
    (wiki/) and 3 epochs with 48 on NLI premises (nli/); the Final scripts keep 48."""
    cfg = load_train_config(PRESETS / f"{preset}.yaml")
    assert (cfg.epochs, cfg.ngcse.generated_per_batch) == (epochs, generated)
    assert ngcse_setting(cfg, "nli-premises") == (
        f"NGCSE on corpus 'nli-premises': {epochs} epoch(s), {generated} generated rows per "
        f"batch ({domain} domain setting of the authors); Wikipedia (wiki/sts_ht.sh): --set "
        "epochs=1 --set ngcse.generated_per_batch=16; NLI premises (nli/sts_ht.sh): --set "
        "epochs=3 --set ngcse.generated_per_batch=48"
    )
    custom = ngcse_setting(cfg.model_copy(update={"epochs": 2}), "x")
    assert custom is not None and "(no domain setting of the authors)" in custom
    assert ngcse_setting(load_train_config(PRESETS / "osscse.yaml"), "x") is None
