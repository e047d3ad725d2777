"""Command-line options, and the config section they read, that several ``cseaug`` sub-commands
take, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel

from cseaug.config import apply_overrides, load_config, validated

RootOption = Annotated[
    str,
    typer.Option(
        "--root",
        help="Output root holding datasets/ (output.root of the config): a directory or an "
        "fsspec URI such as s3://bucket/prefix.",
    ),
]
"""``--root``: the output root of the versions a command reads (``cseaug versions``,
``show``, ``export``, ``verify``, ``diagnose``, ...)."""

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override a setting of the section the command reads, e.g. --set batch_size=64 "
        "(repeatable; keys: the section's docs).",
    ),
]
"""``--set KEY=VALUE`` of the commands that read one section (:func:`config_section`)."""

SectionT = TypeVar("SectionT", bound=BaseModel)


def config_section(
    model: type[SectionT],
    name: str,
    config: Path | None,
    settings: list[str] | None,
    manifest: dict[str, Any] | None = None,
) -> tuple[SectionT, str]:
    """The ``name`` section of the run config ``config`` (else the copy a version's
    ``manifest`` holds, else the defaults) with the ``--set`` ``settings`` applied and
    validated, and where it came from."""
    recorded = (manifest or {}).get("config", {}).get(name)
    if config is not None:
        data, source = getattr(load_config(config), name).model_dump(mode="json"), str(config)
    elif isinstance(recorded, dict):
        data, source = dict(recorded), "the version's manifest"
    else:
        data, source = {}, "defaults"
    data = apply_overrides(data, list(settings or []))
    return validated(model, data, f"section '{name}' ({source})"), source
