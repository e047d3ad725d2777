"""Every help screen shows a flag without a value type (issue 22's "first hour" list)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from cseaug.cli import app

runner = CliRunner(env={"COLUMNS": "200"})


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The argument path of ``command`` and of every command under it (typer's groups)."""
    yield path
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from command_paths(sub, (*path, name))


def test_no_help_screen_shows_a_type_on_a_flag_and_options_keep_theirs() -> None:
    """Before, typer printed `<bool>` beside every flag (`--dry-run`, `--json`, `--help`),
    as if it took a value."""
    paths = list(command_paths(typer.main.get_command(app)))
    assert ("versions",) in paths and ("data", "fetch") in paths
    for path in paths:
        shown = runner.invoke(app, [*path, "--help"])
        assert shown.exit_code == 0, (path, shown.output)
        assert "<bool>" not in shown.output, path
    rows = {
        line.strip("│ ").split()[0]: line
        for line in runner.invoke(app, ["versions", "--help"]).output.splitlines()
        if line.strip("│ ").startswith("--")
    }
    assert "<" not in rows["--dry-run"] and "<str>" in rows["--older-than"]
