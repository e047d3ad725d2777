"""The ``output`` section: where a version is published, its dataset name and its exports
(docs/dataset-contract.md)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from cseaug.config.base import StrictModel, short_for
from cseaug.errors import ConfigError
from cseaug.roots import check_root

DATASET_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""A dataset name: a plain directory name under ``<root>/datasets``."""
MAX_DATASET_NAME = 100
"""Longest dataset name: file names made of it (the run store ``<name>-<id>``, exports,
staging folders) stay far below a file system's 255 bytes per name."""


def dataset_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a dataset name, or None when it can.

    Example:
        >>> dataset_name_problem("wiki-sts") is None, dataset_name_problem("../x")[:22]
        (True, "dataset name '../x' is")
    """
    if len(name) > MAX_DATASET_NAME:
        return (
            f"dataset name of {len(name)} characters is too long: at most {MAX_DATASET_NAME} "
            "(it names directories and files)"
        )
    if DATASET_NAME_RE.match(name):
        return None
    return (
        f"dataset name '{name}' is not allowed: use letters, digits, '.', '_' and '-', "
        "starting with a letter or digit"
    )


def _checked_dataset_name(name: str) -> str:
    problem = dataset_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


DatasetName = Annotated[str, AfterValidator(_checked_dataset_name)]
"""A config value that names a dataset: checked before any work, not at publish time."""


EXPORT_FORMATS: tuple[str, ...] = ("simcse", "ngcse", "sentence-transformers", "jsonl")
"""The export formats, in the one spelling :func:`normalize_export_format` returns."""


def normalize_export_format(fmt: str) -> str:
    """The one spelling of an export format: the config's ``sentence_transformers`` and the
    command line's ``sentence-transformers`` are one format, in any case.

    Example:
        >>> normalize_export_format("sentence_transformers"), normalize_export_format("SimCSE")
        ('sentence-transformers', 'simcse')
    """
    value = fmt.strip().lower().replace("_", "-")
    if value not in EXPORT_FORMATS:
        raise ValueError(
            f"unknown export format '{fmt}'; formats: {', '.join(EXPORT_FORMATS)} "
            "(sentence_transformers is accepted too)"
        )
    return value


ExportLayout = Literal["auto", "pair", "triplet", "quadruplet", "hybrid"]
"""How an export lays out the views of a row (docs/dataset-contract.md, "Exports")."""


class ExportConfig(StrictModel):
    """One export written after publishing (docs/dataset-contract.md, "Exports")."""

    format: Annotated[str, AfterValidator(normalize_export_format)] = Field(
        description="simcse (CSV), ngcse (JSONL), sentence-transformers (Parquet; "
        "sentence_transformers is the same) or jsonl (every view of every row)."
    )
    layout: ExportLayout = Field(
        "auto",
        description="SimCSE / sentence-transformers layout; 'hybrid' (sentence-transformers) keeps "
        "every row: aigen rows with their views, the rest as (x, x) pairs.",
    )


class OutputConfig(StrictModel):
    """Where and how the version is published."""

    root: str = Field(
        "storage",
        description="Output root; datasets go to <root>/datasets/<name>/<version>. A local "
        "directory or an fsspec URI (s3://bucket/prefix with cseaug[s3], gs://..., memory://...); "
        "endpoint and credentials of a URI come from the environment (docs/deployment.md).",
    )
    dataset_name: DatasetName | None = Field(
        None, description="Dataset name; defaults to the config's name."
    )
    heldout_fraction: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="Deterministic share of rows flagged heldout; None: the method's default "
        "(0.1 for NGCSE's sts and nli, 0 for the others), see RunConfig.heldout_fraction.",
    )
    rows_per_file: int = Field(200_000, ge=1, description="Rows per Parquet data file.")
    exports: list[Annotated[ExportConfig, short_for("format")]] = Field(
        default_factory=list,
        description="Exports written beside the version after publishing: a format name, or "
        "{format, layout}.",
    )
    force_new_version: bool = Field(
        False,
        description="Publish a new version even when its data fingerprint equals the latest "
        "version's (by default such a rebuild publishes nothing and reports that version).",
    )

    @field_validator("root")
    @classmethod
    def _known_storage(cls, root: str) -> str:
        try:
            return check_root(root)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
