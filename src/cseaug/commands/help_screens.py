"""Help screens as users read them: a flag shows no value type.

typer 0.29 renders the type of every option in the help panel, flags included, so
``--dry-run``, ``--json`` and ``--help`` read ``<bool>`` as if they took a value. The
commands and groups here give flags (and counting options) an empty metavar, which the panel
prints as nothing; :func:`use_plain_flags` makes them the classes of every command and
group of an app.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder


def _plain_flags(params: list[Any]) -> list[Any]:
    """``params`` with an empty metavar on each flag and counting option that has none."""
    for param in params:
        if isinstance(param, TyperOption) and (param.is_flag or param.count):
            param.metavar = param.metavar or ""
    return params


class PlainFlagsCommand(TyperCommand):
    """A typer command whose help shows no type on its flags (see the module docstring)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))  # the --help option included


class PlainFlagsGroup(TyperGroup):
    """A typer group whose help shows no type on its flags (see the module docstring)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))


def _typers(cls: Any, default: type) -> bool:
    """True when ``cls`` is typer's own class (or its unset default), not one a module chose."""
    return cls is None or cls is default or isinstance(cls, DefaultPlaceholder)


def use_plain_flags(app: typer.Typer) -> None:
    """Give ``app``, its commands and its sub-apps (recursively) the classes above, where
    they have typer's own."""
    if _typers(app.info.cls, TyperGroup):
        app.info.cls = PlainFlagsGroup
    for command in app.registered_commands:
        if _typers(command.cls, TyperCommand):
            command.cls = PlainFlagsCommand
    for group in app.registered_groups:
        if _typers(group.cls, TyperGroup):
            group.cls = PlainFlagsGroup
        if group.typer_instance is not None:
            use_plain_flags(group.typer_instance)
