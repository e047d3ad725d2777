"""Count how often a config is read and validated: the tests of "validated once, at the edge"."""

from __future__ import annotations

from types import ModuleType

import pytest
from pydantic import BaseModel


def count_validations(
    monkeypatch: pytest.MonkeyPatch, loader: ModuleType, model: type[BaseModel]
) -> list[str]:
    """Every YAML read through ``loader.load_yaml_model`` (``"read"``) and every validation of
    a whole ``model`` from data (``"validate"``), from now on, in order."""
    calls: list[str] = []
    read, validate = loader.load_yaml_model, model.model_validate.__func__

    def counted_read(*args, **kwargs):
        calls.append("read")
        return read(*args, **kwargs)

    def counted_validate(cls, *args, **kwargs):
        calls.append("validate")
        return validate(cls, *args, **kwargs)

    monkeypatch.setattr(loader, "load_yaml_model", counted_read)
    monkeypatch.setattr(model, "model_validate", classmethod(counted_validate))
    return calls
