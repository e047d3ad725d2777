"""Count how often a config is read and validated: the tests of "validated once, at the edge"."""

from __future__ import annotations

from types import ModuleType

import pytest
from pydantic import BaseModel


def count_validations(
    monkeypatch: pytest.MonkeyPatch, model: type[BaseModel], *loaders: ModuleType
) -> list[str]:
    """Every YAML read through ``load_yaml_model`` of one of ``loaders`` (``"read"``) and every
    validation of a whole ``model`` from data (``"validate"``), from now on, in order."""
    calls: list[str] = []
    validate = model.model_validate.__func__

    def counted(read):
        def counted_read(*args, **kwargs):
            calls.append("read")
            return read(*args, **kwargs)

        return counted_read

    def counted_validate(cls, *args, **kwargs):
        calls.append("validate")
        return validate(cls, *args, **kwargs)

    for loader in loaders:
        monkeypatch.setattr(loader, "load_yaml_model", counted(loader.load_yaml_model))
    monkeypatch.setattr(model, "model_validate", classmethod(counted_validate))
    return calls
