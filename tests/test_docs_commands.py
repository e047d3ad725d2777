"""Every ``cseaug`` command in README.md and docs/*.md runs as written.

The commands are those of the fenced ``bash`` blocks (continued lines joined, a ``|``, ``;``,
``&&`` or ``#`` ends one) and the inline code that starts with ``cseaug`` or
``.venv/bin/cseaug``. Each is parsed by the real typer app (click's own parser: an unknown
command or option, a missing argument or option value fails); a synopsis
(``cseaug export NAME[/VERSION] --format simcse|ngcse``) or a mention of a command and its
flags in prose (``cseaug build --dry-run``) must name a command and options that exist. Then
the cheap ones run: the ``--help`` of each documented command, and the documented dry runs
on the shared data (``data/`` as README's "Data" fetches it, here a sample of it).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer._click.exceptions import UsageError  # the parser of typer's own click
from typer.testing import CliRunner

from cseaug.cli import app

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`((?:\.venv/bin/)?cseaug(?: [^`]*)?)`")
IN_A_LINE = re.compile(r"(?:^|[\s(])((?:\.venv/bin/)?cseaug (?:[^|;&#)]*))")
PLACEHOLDER = re.compile(r"[\[\]|<>$]|\.\.\.|^[A-Z][A-Z_]*(?:[/\[=].*)?$")
"""A token a reader or the shell replaces: ``[--out PATH]``, ``simcse|ngcse``, ``NAME/vNNNN``,
``C``, ``$S``."""


@dataclass(frozen=True)
class Documented:
    doc: str
    text: str
    inline: bool

    def __str__(self) -> str:
        return f"{self.doc}: {self.text}"


def shell_lines(block: str) -> list[str]:
    """A shell block's command lines, as written: continued lines and lines inside quotes
    joined, comments left out."""
    lines: list[str] = []
    quoted = False  # the last line opened a quote it did not close
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        if quoted:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line.strip())
        quote = None
        for index, char in enumerate(lines[-1]):
            if char in "'\"" and quote in (None, char):
                quote = None if quote else char
            elif char == "#" and quote is None and (index == 0 or lines[-1][index - 1] == " "):
                lines[-1] = lines[-1][:index].rstrip()
                break
        quoted = quote is not None
    return lines


def documented_commands() -> list[Documented]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for language, body in FENCE.findall(text):
            if language in ("bash", "sh", "shell", "console"):
                for line in shell_lines(body):
                    if command := IN_A_LINE.search(line):
                        found.append(Documented(path.name, " ".join(command[1].split()), False))
        for command in INLINE.findall(FENCE.sub("", text)):
            found.append(Documented(path.name, " ".join(command.split()), True))
    return found


COMMANDS = documented_commands()
ROOT = typer.main.get_command(app)


def resolve(tokens: list[str]) -> tuple[list[str], Any, list[str]]:
    """The command path the tokens name, its (typer's) click command, the arguments left."""
    command, path = ROOT, []
    while hasattr(command, "commands") and tokens and tokens[0] in command.commands:
        path.append(tokens[0])
        command = command.commands[tokens.pop(0)]
    return path, command, tokens


def options_of(command: Any) -> set[str]:
    return {name for p in command.params for name in (*p.opts, *p.secondary_opts)} | {"--help"}


@pytest.mark.parametrize("documented", COMMANDS, ids=str)
def test_a_documented_command_parses(documented: Documented) -> None:
    """Proves: every documented command names a command and options that exist, and a whole
    command line (not a synopsis, not a mention of flags in prose) parses as typed."""
    tokens = shlex.split(documented.text.replace("\\|", "|"), comments=True)[1:]
    path, command, args = resolve(tokens)
    if hasattr(command, "commands"):
        if args and PLACEHOLDER.search(args[0]):
            return  # cseaug COMMAND --help
        assert not args or args == ["--help"], f"{documented}: no command {args[0]!r}"
        return
    named = {a.split("=")[0] for a in args if a.startswith("-")}
    unknown = named - options_of(command)
    assert not unknown, f"{documented}: {' '.join(path)} has no option {sorted(unknown)}"
    mention = documented.inline and all(a.startswith("-") for a in args)
    if mention or any(PLACEHOLDER.search(a) for a in args):
        return
    try:
        command.make_context(" ".join(["cseaug", *path]), list(args))
    except typer.Exit:
        pass  # --help
    except UsageError as error:
        pytest.fail(f"{documented}: {error.format_message()}")


def test_the_documented_commands_were_found() -> None:
    """The extraction itself: fenced and inline commands of README.md and docs/ are found,
    continued lines joined, and prose after inline code left out."""
    texts = {c.text for c in COMMANDS}
    assert len({c.doc for c in COMMANDS}) >= 15 and len(COMMANDS) > 150
    assert ".venv/bin/cseaug build --config configs/wiki-sts.yaml --dry-run" in texts
    assert any(t.startswith("cseaug compare --out fig7 --version") for t in texts)


def test_the_help_screen_of_every_documented_command_shows() -> None:
    paths = {
        tuple(resolve(shlex.split(c.text.replace("\\|", "|"), comments=True)[1:])[0])
        for c in COMMANDS
    }
    assert len(paths) >= 15
    for path in sorted(paths):
        shown = CliRunner().invoke(app, [*path, "--help"])
        assert shown.exit_code == 0, (path, shown.output)


DRY_RUNS = sorted(
    {
        c.text
        for c in COMMANDS
        if " build " in c.text and "--dry-run" in c.text and not PLACEHOLDER.search(c.text)
        if "$" not in c.text and "--config" in c.text
    }
)


WIKI_LINES = 300


@pytest.mark.slow
@pytest.mark.parametrize("text", DRY_RUNS)
def test_a_documented_dry_run_runs(
    text: str, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves: the documented dry runs run as written, from a folder laid out as README's
    "Data" says (``data/``: the shared sample of each input, under the names fetched). The
    corpus is the wiki sample's first lines: a dry run of the whole sample costs ~12 s of
    cleaning 35,000 placeholder answers, which proves nothing about the command line."""
    data = tmp_path / "data"
    data.mkdir()
    with (shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt").open() as wiki:
        (data / "wiki1m_for_simcse.txt").write_text("".join(next(wiki) for _ in range(WIKI_LINES)))
    for name in os.listdir(shared_data):
        if not (data / name).exists():
            (data / name).symlink_to(shared_data / name)
    for folder in ("configs", "examples"):
        (tmp_path / folder).symlink_to(REPO / folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dry-run-sends-nothing")
    done = CliRunner().invoke(app, shlex.split(text)[1:], env={"COLUMNS": "200"})
    assert done.exit_code == 0, f"{text}\n{done.output}"
    assert "dry run: nothing sent, nothing published" in done.output
