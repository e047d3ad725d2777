"""Command-line options that several ``cseaug`` sub-commands take, defined once."""

from __future__ import annotations

from typing import Annotated

import typer

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
