"""What every config model shares: strict validation, ``auto`` sizes, training precisions."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

OLD_PRECISION_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
"""The training precisions' names before they took torch's: still accepted (the docs showed
``--precision bf16``, users' configs may hold them), read as the new names."""


TrainingPrecision = Annotated[
    Literal["auto", "float32", "bfloat16", "float16"],
    BeforeValidator(
        lambda value: OLD_PRECISION_NAMES.get(value, value) if isinstance(value, str) else value
    ),
]
"""A training precision setting (the trainer's, VAEGPT-Sim's)."""


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are errors, values are validated on assignment,
    every number is finite (an infinite timeout or a NaN threshold would fail later), and a
    rejected value is never repeated in an error (it may be a secret pasted in the wrong place)."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, hide_input_in_errors=True, allow_inf_nan=False
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Refuse ``true``/``false`` where a number goes, in every numeric setting (pydantic
        reads ``sample.size=true`` as 1), inside lists, tuples and mappings too."""
        kinds = _kinds(cls.model_fields[info.field_name or ""].annotation)
        numeric = kinds & {int, float} and not kinds & {bool, Any}
        models = any(isinstance(kind, type) and issubclass(kind, BaseModel) for kind in kinds)
        if numeric and not models and any(isinstance(item, bool) for item in _scalars(value)):
            raise PydanticCustomError("bool_not_number", "Input should be a number, not a boolean")
        return value


@cache
def _kinds(annotation: Any) -> frozenset[Any]:
    """The types a value (or an item of it) may have under ``annotation``."""
    args = get_args(annotation)
    if get_origin(annotation) is Annotated:
        return _kinds(args[0])
    if get_origin(annotation) is Literal:
        return frozenset(type(value) for value in args)
    return frozenset().union(*map(_kinds, args)) if args else frozenset({annotation})


def _scalars(value: Any) -> list[Any]:
    """``value``, or the items of its lists, tuples and mapping values, at every depth."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple | set):
        return [scalar for item in value for scalar in _scalars(item)]
    return [value]


AUTO = "auto"
"""The value of a size or engine setting that the library chooses for the machine it runs on."""

BatchSize = Annotated[int, Field(ge=1)] | Literal["auto"]
"""A batch size: a number, or ``auto`` (chosen from the device and its free memory)."""


def short_for(key: str) -> BeforeValidator:
    """A section given as a bare string ``x`` is short for ``{key: x}`` (``runner: dask``)."""
    return BeforeValidator(lambda value: {key: value} if isinstance(value, str) else value)
