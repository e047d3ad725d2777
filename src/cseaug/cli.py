"""The ``cseaug`` command line (typer). Commands live in :mod:`cseaug.commands`.

This is the top floor of the library: ``cseaug build`` starts the Prefect flow so that every
run shows in Prefect. Errors of the :class:`~cseaug.errors.CseaugError` family are printed
as one clear message with exit status 2, without a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from cseaug.errors import CseaugError

COMMAND_MODULES: tuple[str, ...] = (
    "build",
    "datasets",
    "diagnostics",
    "osscse",
    "train",
    "vaegpt",
)
"""Modules under :mod:`cseaug.commands` whose ``register(app)`` adds commands."""

app = typer.Typer(
    name="cseaug",
    help="Build contrastive sentence-embedding training data (NGCSE, SKICSE, OssCSE, VAEGPT-Sim).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"cseaug.commands.{_name}").register(app)


def main() -> None:
    """Entry point of the ``cseaug`` script."""
    try:
        app()
    except CseaugError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
