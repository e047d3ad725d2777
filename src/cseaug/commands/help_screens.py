"""Help screens as users read them: typer 0.29 renders every option's type, so ``--dry-run``
read ``<bool>`` as if it took a value; the classes here give flags and counting options an
empty metavar, and :func:`use_plain_flags` makes them those of every command of an app.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption


class _PlainFlags:
    """Gives every flag and counting option without a metavar an empty one (``--help`` too)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if isinstance(param, TyperOption) and (param.is_flag or param.count):
                param.metavar = param.metavar or ""
        return params


class PlainFlagsCommand(_PlainFlags, TyperCommand):
    """A typer command whose help shows no type on its flags."""


class PlainFlagsGroup(_PlainFlags, TyperGroup):
    """A typer group whose help shows no type on its flags."""


def use_plain_flags(app: typer.Typer) -> None:
    """Give ``app``, its commands and its sub-apps (recursively) the classes above."""
    app.info.cls = PlainFlagsGroup
    for command in app.registered_commands:
        command.cls = PlainFlagsCommand
    for group in app.registered_groups:
        group.cls = PlainFlagsGroup
        if group.typer_instance is not None:
            use_plain_flags(group.typer_instance)
