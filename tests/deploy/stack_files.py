"""The stack's files read the way their tools read them, for tests that cannot run Docker.

docker compose's variable interpolation (``${VAR}``, ``${VAR:-default}``, ``${VAR:?error}``,
``$$``), ``.env`` files, Dockerfile instructions and stages, ``.dockerignore`` patterns, and
the deployments of ``prefect.yaml`` with the Prefect flow each entrypoint names.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]

_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")


@dataclass(frozen=True)
class Reference:
    """One ``${NAME[op arg]}`` in a compose file."""

    name: str
    op: str | None
    arg: str | None


def references(text: str) -> list[Reference]:
    """Every variable reference in ``text``; ``$$`` is a literal dollar, not a reference."""
    return [
        Reference(m["name"], m["op"], m["arg"]) for m in _REFERENCE.finditer(text.replace("$$", ""))
    ]


def bare_dollars(text: str) -> list[str]:
    """``$NAME`` forms without braces (compose reads them too; this project spells ``${NAME}``)."""
    return re.findall(r"\$[A-Za-z_][A-Za-z0-9_]*", text.replace("$$", ""))


class UnsetVariable(ValueError):
    """A ``${VAR:?message}`` whose variable is unset or empty, as compose refuses it."""


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Substitute variables in every string of a parsed compose file, as compose does.

    Args:
        value: the parsed YAML (dicts, lists, scalars).
        env: the variables (a ``.env`` file's contents).

    Raises:
        UnsetVariable: a required variable (``:?``/``?``) is missing.
    """
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"] or ""
        is_set = name in env
        is_filled = bool(env.get(name))
        if op is None:
            return env.get(name, "")
        if op in (":-", "-"):
            return env[name] if (is_filled if op == ":-" else is_set) else arg
        if op in (":?", "?"):
            if not (is_filled if op == ":?" else is_set):
                raise UnsetVariable(f"{name}: {arg}")
            return env[name]
        return arg if (is_filled if op == ":+" else is_set) else ""

    parts = value.split("$$")
    return "$".join(_REFERENCE.sub(substitute, part) for part in parts)


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of a ``.env`` file (comments and blank lines skipped)."""
    variables: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"{path.name}:{number}: not a KEY=VALUE line: {line!r}")
        variables[name] = value
    return variables


def load_yaml(path: Path) -> Any:
    """A YAML file with anchors and ``<<`` merge keys resolved (PyYAML's safe loader)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction with its continuation lines joined."""

    keyword: str
    arguments: str


def dockerfile_instructions(path: Path) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, ``\\`` continuations joined.

    Heredocs (``RUN <<EOF``) are not understood; the project's Dockerfile has none.
    """
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    instructions: list[Instruction] = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\"):  # Docker drops the backslash and the newline, nothing else
            line = line[:-1] + next(lines)
        keyword, _, arguments = line.strip().partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip()))
    return instructions


def dockerfile_stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The build stages: each list starts with its ``FROM``."""
    stages: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def dockerignore_patterns(path: Path) -> list[str]:
    """The patterns of a ``.dockerignore`` (comments and blank lines skipped)."""
    return [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def is_ignored(relative: Path, patterns: list[str]) -> bool:
    """Whether Docker leaves ``relative`` (or a parent of it) out of the build context.

    Only the two forms this project's ``.dockerignore`` uses are understood: a top-level
    name (``data``) and a name at any depth (``**/__pycache__``).
    """
    parts = relative.parts
    for pattern in patterns:
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatch(part, pattern[3:]) for part in parts):
                return True
        elif fnmatch.fnmatch(parts[0], pattern):
            return True
    return False


def copy_build_context(destination: Path) -> Path:
    """Copy the repository into ``destination`` as ``COPY . /app`` would (``.dockerignore``)."""
    patterns = dockerignore_patterns(REPO / ".dockerignore")

    def ignored(directory: str, names: list[str]) -> list[str]:
        base = Path(directory).relative_to(REPO)
        return [name for name in names if is_ignored(base / name, patterns)]

    shutil.copytree(REPO, destination, ignore=ignored)
    return destination


def deployments() -> list[dict[str, Any]]:
    """The deployments of ``prefect.yaml``, anchors and merge keys resolved."""
    return load_yaml(REPO / "prefect.yaml")["deployments"]


def flow_name(entrypoint: str) -> str | None:
    """The Prefect flow name of a ``path.py:function`` entrypoint, read from its ``@flow``
    decorator; None when the file or the function is missing or the function is no flow."""
    path_text, _, function = entrypoint.partition(":")
    path = REPO / path_text
    if not path.is_file():
        return None
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            return next(_flow_decorator_names(node), None)
    return None


def _flow_decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    """The name each ``@flow`` / ``@flow(...)`` decorator gives (Prefect's default: the
    function name with dashes)."""
    default = node.name.replace("_", "-")
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        if getattr(target, "id", None) != "flow":
            continue
        names = [
            keyword.value.value
            for keyword in (call.keywords if call else [])
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant)
        ]
        yield names[0] if names else default
